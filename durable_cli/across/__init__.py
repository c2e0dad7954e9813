"""The services over many objects, through a Store: ls/ttl/purge/sweep (retention), forget/export/import/
backup (rights), doctor, search, usage and `import --from llm`. The Python twin of worker/src/across.ts,
indexes.ts and search.ts; the rules over one opened object stay in core/."""
