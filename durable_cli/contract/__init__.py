"""Where the two runtimes meet: contract.json (the op table, constants, messages, transitions, exit codes,
JSON shapes), the vectors both languages run (vectors.json, unicode.json), and their Python loaders:
ops (the op table), optable (each op's entry, generated), protocol (generated), vocabulary (constants),
messages (the catalog: say()), text (printable and white space). The Worker imports contract.json itself."""
