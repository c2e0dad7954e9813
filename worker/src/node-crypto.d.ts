// The one Node API the Worker uses (workerd's nodejs_compat): a synchronous SHA-256 for request hashes.
declare module "node:crypto" {
  interface Hash { update(data: string): Hash; digest(encoding: "hex"): string }
  export function createHash(algorithm: string): Hash;
}
