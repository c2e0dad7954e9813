// Hooks and the outbox (mirrors durable_cli/core/hooks.py, docs/reference/sessions.md §5.3): not built remotely yet.
import { Opened, invalid } from "./state";
import type { ObjectArgs } from "../generated/ops";

const NOT_YET = "hooks are not available on a remote store yet: add them on a local one";

export function create(_obj: Opened, _a: ObjectArgs["hook"]): never {
  throw invalid(NOT_YET);
}
export function hooks(_obj: Opened, _a: ObjectArgs["hooks"]): never {
  throw invalid(NOT_YET);
}
export function unhook(_obj: Opened, _a: ObjectArgs["unhook"]): never {
  throw invalid(NOT_YET);
}
export function deliveries(_obj: Opened, _a: ObjectArgs["deliveries"]): never {
  throw invalid(NOT_YET);
}
