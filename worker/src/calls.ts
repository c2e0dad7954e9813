// Calls to one object's Durable Object, as the Worker's router (index.ts) and the search fan-out (search.ts)
// make them: its own module, so neither of those imports the other.
import { DurableError } from "./rules/state";

/** One call to the object's Durable Object (`idFromName` of its id); its Response as it answered.
 *  A DO error marked `overloaded` is busy (exit 6) and not retried (Cloudflare: retrying adds load);
 *  only one marked `retryable` tells the client to retry (with the same request id). DEV_FAULT (tests,
 *  DURABLE_DEV_FAULTS only): fail this call as Cloudflare marks an overloaded or a retryable error. */
export async function callObject(env: { OBJECTS: DurableObjectNamespace }, id: string, call: unknown, devFault: string | null = null,
  raw: Uint8Array | null = null): Promise<Response> {
  const stub = env.OBJECTS.get(env.OBJECTS.idFromName(id));
  try {
    if (devFault === "overloaded") throw Object.assign(new Error("Durable Object is overloaded. Too many requests queued."), { overloaded: true });
    if (devFault === "retryable" && !faulted.has((call as { request_id?: string }).request_id ?? "")) {
      faulted.add((call as { request_id?: string }).request_id ?? "");
      throw Object.assign(new Error("Network connection lost."), { retryable: true });
    }
    // RAW: the body as it came (raw.ts), its call without args in a header; the object parses the body once
    return await stub.fetch("https://object/call", raw === null ? { method: "POST", body: JSON.stringify(call) }
      : { method: "POST", body: raw, headers: { "x-durable-call": encodeURIComponent(JSON.stringify(call)) } });
  } catch (e) {
    const err = e as Error & { overloaded?: boolean; retryable?: boolean };
    if (err.overloaded) throw new DurableError(`the object is overloaded (${err.message}); try again later`, "busy");
    throw Object.assign(new DurableError(`the object did not answer: ${err.message}`, "busy"), { retryable: err.retryable === true });
  }
}

const faulted = new Set<string>(); // request ids a "retryable" dev fault has failed once
