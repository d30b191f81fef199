import { dial } from "./connect.mjs";

// connectServing connects as the user the module's tools are served as on this machine,
// serve.<machine>.<module>, with a credential of its own in NATS_SERVE_PASSWORD, NATS_SERVE_NKEY
// or NATS_SERVE_CREDS: a second connection, which only a module that serves tools opens. The bus
// lets it subscribe the module's tools and answer the calls, nothing else; it has no inbox, so it
// makes no request (a tool call, a publish awaiting its ack) of its own.
export async function connectServing(module) {
  return dial(`serve.${process.env.MESH_MACHINE}.${module}`, "NATS_SERVE_");
}

// serveTool answers the calls of one of the module's tools, mesh.mod.<module>.tool.<tool>, on the
// serving connection. It subscribes in the queue group named like the module: the bus grants the
// subject in that group only, so each call is answered once, by one of the module's instances.
export function serveTool(serving, module, tool, answer) {
  return serving.subscribe(`mesh.mod.${module}.tool.${tool}`, {
    queue: module,
    callback: (err, m) => {
      if (!err) m.respond(answer(m.data));
    },
  });
}

// callTool calls a tool its manifest lists under calls:, on the module's own connection, and
// resolves to the answer.
export async function callTool(nc, module, tool, request) {
  const answer = await nc.request(`mesh.mod.${module}.tool.${tool}`, request, { timeout: 5000 });
  return answer.data;
}
