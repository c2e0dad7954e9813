// The lifecycle of docs/reference/sessions.md §5 as data (mirrors durable_cli/core/lifecycle.py): the transition table, loaded
// from durable_cli/contract/contract.json like the Python side's, the one function that reads it, and the input
// checks every write of one object shares (titles, request ids). Used by sessions, transcript, elicit,
// checkpoints and retention; sessions.ts holds the prompt queue that moves an object through it.
import contract from "../../../durable_cli/contract/contract.json";
import { MessageKey, Opened, conflict, invalid, notFound, say } from "./state";
import { printable, strip } from "./text";

type Transition = { from: string[]; to: string | null; role: string | null };
const TRANSITIONS = contract.transitions as Record<string, Transition>;

export function check(obj: Opened, command: string, status: string | null = null, noop = false): string | null {
  const { from, to, role } = TRANSITIONS[command];
  if (role === "owner") obj.requireOwner(command === "invite" ? "invite participants" : command);
  if (noop) return null;
  const current = status ?? obj.meta()!.status;
  if (!from.includes(current)) throw conflict(refusal(obj, command, current));
  return to ?? current;
}

function refusal(obj: Opened, command: string, current: string): string {
  const [what, name] = [obj.what, obj.name];
  if (current === "archived") return say("refused_archived", { what, name });
  if (current === "cancelled" && command === "archive") return say("refused_cancelled_archive", { what, name });
  if (current === "cancelled") return say("refused_cancelled", { what, name });
  if (command === "unarchive") return say("refused_not_archived", { what, status: current });
  return say(`cannot_${command}` as MessageKey, { what, status: current });
}

export function requireSession(obj: Opened) {
  const meta = obj.meta();
  if (meta === null) throw notFound(obj.missing);
  return meta;
}

export function validTitle(title: unknown): string {
  const t = typeof title === "string" ? strip(title) : title;
  if (typeof t !== "string" || [...t].length < 1 || [...t].length > 200 || !printable(t)) throw invalid(say("invalid_title"));
  return t;
}

export function validRequestId(id: unknown) {
  if (id != null && (typeof id !== "string" || id.length < 1 || [...id].length > 128 || !printable(id))) {
    throw invalid(say("invalid_request_id"));
  }
  return id;
}
