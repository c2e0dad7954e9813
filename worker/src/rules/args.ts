// Every call's arguments checked against the contract's op table before the op runs (docs/reference/remote.md §13: a
// crafted body is HTTP 400 -> exit 2, never 500). The table is durable_cli/contract/contract.json "ops",
// generated into ../generated/ops.ts; the Python client builds the same calls from the same table.
import { ArgSpec, SCOPES } from "../generated/ops";
import { invalid } from "./state";
import { quote } from "./text";

const shown = (v: unknown) => (typeof v === "string" ? quote(v.length > 40 ? v.slice(0, 37) + "..." : v) : JSON.stringify(v)?.slice(0, 40) ?? String(v));

/** Why V does not meet SPEC, or null when it does (null and absent are the default, unless required). */
function wrong(v: unknown, spec: ArgSpec): string | null {
  switch (spec.type) {
    case "integer":
      if (typeof v !== "number" || !Number.isInteger(v) || v < (spec.min ?? -Infinity) || v > (spec.max ?? Infinity)) {
        return `is not an integer from ${spec.min} to ${spec.max}`;
      }
      return null;
    case "string": return typeof v === "string" ? null : "is not a string";
    case "boolean": return typeof v === "boolean" ? null : "is not true or false";
    case "enum": return typeof v === "string" && spec.values!.includes(v) ? null : `is not one of ${spec.values!.join(", ")}`;
    case "object": return v !== null && typeof v === "object" && !Array.isArray(v) ? null : "is not a JSON object";
    case "array": {
      if (!Array.isArray(v)) return "is not a JSON array";
      if (spec.max_items !== undefined && v.length > spec.max_items) return `has ${v.length} items, more than ${spec.max_items}`;
      if (spec.items) {
        for (let i = 0; i < v.length; i++) {
          const why = v[i] === null ? "is null" : wrong(v[i], spec.items);
          if (why) return `item ${i + 1} (${shown(v[i])}) ${why}`;
        }
      }
      return null;
    }
    default: return null; // json: any JSON value
  }
}

/** Exit 2 (HTTP 400) naming the argument, unless OP of SCOPE exists and ARGS meet its specs. */
export function checkArgs(scope: string, op: unknown, args: unknown): void {
  const table = SCOPES[scope];
  if (typeof op !== "string" || !table || !Object.prototype.hasOwnProperty.call(table, op)) {
    throw invalid(`unknown operation ${quote(String(op))}${table ? "" : ` in scope ${quote(String(scope))}`}; is the client as new as the Worker?`);
  }
  if (args === undefined || args === null) args = {};
  if (typeof args !== "object" || Array.isArray(args)) throw invalid(`the arguments of ${op} are not a JSON object`);
  const given = args as Record<string, unknown>;
  for (const [name, spec] of Object.entries(table[op].args)) {
    const v = given[name];
    if (v === undefined || v === null) {
      if (spec.required) throw invalid(`argument ${name} of ${op} is missing`);
      continue;
    }
    const why = wrong(v, spec);
    if (why) throw invalid(`invalid argument ${name} of ${op}: ${spec.type === "array" ? why : `${shown(v)} ${why}`}`);
  }
}
