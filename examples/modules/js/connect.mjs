import { readFileSync } from "node:fs";
import { connect as natsConnect, credsAuthenticator, nkeyAuthenticator } from "@nats-io/transport-node";

// connect connects to the bus as the module's user on this machine, mod.<machine>.<module>: the
// connection the module publishes, consumes, calls tools and takes seat work on. Its credential
// is in NATS_PASSWORD, NATS_NKEY or NATS_CREDS (dial).
export async function connect(module) {
  const user = `mod.${process.env.MESH_MACHINE}.${module}`;
  // The bus lets this user receive replies in _INBOX.<user>.> and nowhere else: without this
  // prefix every request (a call, a pull, a publish awaiting its ack) times out.
  return dial(user, "NATS_", { inboxPrefix: `_INBOX.${user}` });
}

// dial connects as user with the credential its deployment was given, read from the environment
// variable prefix+PASSWORD (auth: password), prefix+NKEY, an nkey seed file (auth: nkey), or
// prefix+CREDS, a credentials file (auth: operator).
export async function dial(user, prefix, opts = {}) {
  opts = { ...opts, servers: process.env.NATS_URL, name: user };
  const env = (name) => process.env[prefix + name];
  if (env("CREDS")) {
    opts.authenticator = credsAuthenticator(readFileSync(env("CREDS")));
  } else if (env("NKEY")) {
    opts.authenticator = nkeyAuthenticator(new TextEncoder().encode(readFileSync(env("NKEY"), "utf8").trim()));
  } else {
    opts.user = user;
    opts.pass = env("PASSWORD");
  }
  const nc = await natsConnect(opts);
  // A refusal arrives on its own, not as the failing call's error (which is a timeout): say it
  // where it can be read.
  (async () => {
    for await (const s of nc.status()) {
      if (s.type === "error") console.error(`bus: ${user}: ${s.error}`);
    }
  })();
  return nc;
}
