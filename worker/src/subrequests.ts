// Cloudflare's per-request subrequest limit, enforced in every environment (docs/reference/remote.md §13 "Cloudflare's limits
// hold on workerd too"; docs/remote.md "Limits"): every call the Worker makes to a Durable Object is a
// subrequest of the request it serves, counted here; one past the limit fails as it would deployed.
import { DurableError } from "./rules/state";

export const DEFAULT_SUBREQUESTS = 10000; // Workers Paid's default per request (`limits.subrequests` in wrangler.jsonc)

let most = 0; // the most one request made since takeMaxSubrequests last read it (the tests' hook)
let served = 0; // requests the Worker served since takeServed last read it (the tests' hook)

export function takeMaxSubrequests(): number {
  const m = most;
  most = 0;
  return m;
}

export function takeServed(): number {
  const n = served;
  served = 0;
  return n;
}

type Namespaces = { OBJECTS: DurableObjectNamespace; INDEX: DurableObjectNamespace };

/** The limit a Durable Object's own requests are held to: the Worker's (checked by auth.ts checkConfig). */
export function limitOf(env: { DURABLE_SUBREQUEST_LIMIT?: string }): number {
  const n = Number(env.DURABLE_SUBREQUEST_LIMIT);
  return Number.isSafeInteger(n) && n > 0 ? n : DEFAULT_SUBREQUESTS;
}

/** ENV with its Durable Object namespaces counting this request's subrequests against LIMIT. A Durable
 *  Object counts its own (SERVED false: each request or alarm it runs has a limit of its own, as deployed). */
export function counted<E extends Namespaces>(env: E, limit: number, isServed = true): E {
  let n = 0;
  if (isServed) served++;
  const wrap = (ns: DurableObjectNamespace): DurableObjectNamespace => ({
    idFromName: (name: string) => ns.idFromName(name),
    get: (id: DurableObjectId) => {
      const stub = ns.get(id);
      return {
        fetch: (input: RequestInfo, init?: RequestInit) => {
          n++;
          if (n > most) most = n;
          if (n > limit) {
            throw new DurableError(`too many subrequests: this request needed more than ${limit} (Cloudflare's per-request limit; docs/remote.md)`, "internal");
          }
          return stub.fetch(input as any, init as any);
        },
      } as unknown as DurableObjectStub;
    },
  } as unknown as DurableObjectNamespace);
  return { ...env, OBJECTS: wrap(env.OBJECTS), INDEX: wrap(env.INDEX) };
}
