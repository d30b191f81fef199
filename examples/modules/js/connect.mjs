import { readFileSync } from "node:fs";
import { connect as natsConnect, credsAuthenticator, nkeyAuthenticator } from "@nats-io/transport-node";

// connect connects to the bus as the module's user on this machine, mod.<machine>.<module>, with
// the credential its deployment was given: a password (auth: password), an nkey seed file
// (auth: nkey) or a credentials file (auth: operator).
export async function connect(module) {
  const user = `mod.${process.env.MESH_MACHINE}.${module}`;
  const opts = {
    servers: process.env.NATS_URL,
    name: user,
    // The bus lets this user receive replies in _INBOX.<user>.> and nowhere else: without this
    // prefix every request (a call, a pull, a publish awaiting its ack) times out.
    inboxPrefix: `_INBOX.${user}`,
  };
  if (process.env.NATS_CREDS) {
    opts.authenticator = credsAuthenticator(readFileSync(process.env.NATS_CREDS));
  } else if (process.env.NATS_NKEY) {
    opts.authenticator = nkeyAuthenticator(new TextEncoder().encode(readFileSync(process.env.NATS_NKEY, "utf8").trim()));
  } else {
    opts.user = user;
    opts.pass = process.env.NATS_PASSWORD;
  }
  const nc = await natsConnect(opts);
  // A refusal arrives on its own, not as the failing call's error (which is a timeout): say it
  // where it can be read.
  (async () => {
    for await (const s of nc.status()) {
      if (s.type === "error") console.error(`bus: ${s.error}`);
    }
  })();
  return nc;
}
