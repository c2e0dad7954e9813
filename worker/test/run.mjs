// `npm test`: every *.test.ts (the vectors in test/, each rule's unit tests beside it in src/rules/) bundled into
// ONE module, run by node's test runner in one process: sql.js's WebAssembly is loaded once, not once per file
// (twelve processes took ~19 s of a 2-core machine, one takes ~3 s). A new test file is found by the walk.
import { build } from "esbuild";
import { readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { spawnSync } from "node:child_process";

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === "node_modules" || name === "dist" ? [] : walk(path);
    return name.endsWith(".test.ts") ? [path] : [];
  });
}

const files = [...walk("test"), ...walk("src")].sort();
await build({
  stdin: { contents: files.map((f) => `import "./${relative(".", f)}";`).join("\n"), resolveDir: ".", loader: "ts" },
  bundle: true, format: "esm", platform: "node", target: "es2022", external: ["sql.js"],
  outfile: "dist/test/all.test.mjs", logLevel: "warning",
});
const run = spawnSync(process.execPath, ["--test", "dist/test/all.test.mjs"], { stdio: "inherit" });
process.exit(run.status ?? 1);
