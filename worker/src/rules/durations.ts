// Durations (mirrors durable_cli/durations.py, docs/reference/output.md §4): "90d", "1h30m" -> seconds. Units w d h m s,
// in that order, each at most once, no leading zeros; at most 36500d. The Worker parses the ones a schedule is given
// as written (`--in`, `--every`: docs/reference/sessions.md §5.3), with the same vectors as the client.
import { invalid, pyRepr } from "./state";

const UNITS = [604800, 86400, 3600, 60, 1];
export const MAX_SECONDS = 36500 * 86400;
const GRAMMAR = /^(?:([1-9][0-9]*)w)?(?:([1-9][0-9]*)d)?(?:([1-9][0-9]*)h)?(?:([1-9][0-9]*)m)?(?:([1-9][0-9]*)s)?$/;

export function parse(text: unknown, what = "duration"): number {
  const m = typeof text === "string" && text ? GRAMMAR.exec(text) : null;
  if (m === null || !m.slice(1).some((g) => g !== undefined)) {
    throw invalid(`invalid ${what} ${pyRepr(text)}: use a number with a unit of w d h m s, e.g. 90d, 1h30m, 45s`);
  }
  const groups = m.slice(1);
  const long = groups.some((n) => n !== undefined && n.length > 12);
  const total = long ? null : groups.reduce((sum, n, i) => sum + (n === undefined ? 0 : Number(n) * UNITS[i]), 0);
  if (total === null || total > MAX_SECONDS) {
    const s = text as string;
    const shown = [...s].length <= 40 ? s : [...s].slice(0, 37).join("") + "...";
    throw invalid(`invalid ${what} ${pyRepr(shown)}: at most 36500d (100 years)`);
  }
  return total;
}
