"""Remote mode (docs/reference/remote.md §13): the same operations served by a Cloudflare Durable Object per durable object."""
