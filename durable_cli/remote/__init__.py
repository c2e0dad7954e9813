"""Remote mode (SPEC §13): the same operations served by a Cloudflare Durable Object per durable object."""
