// The one Node API the Worker uses (workerd's nodejs_compat): a synchronous SHA-256 for request hashes.
declare module "node:crypto" {
  export function createHash(algorithm: string): { update(data: string): { digest(encoding: "hex"): string } };
}
