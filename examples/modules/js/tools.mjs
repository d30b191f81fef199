// serveTool answers the calls of one of the module's tools, mesh.mod.<module>.tool.<tool>. It
// subscribes in the queue group named like the module: the bus grants the subject in that group
// only, so each call is answered once, by one of the module's instances.
export function serveTool(nc, module, tool, answer) {
  return nc.subscribe(`mesh.mod.${module}.tool.${tool}`, {
    queue: module,
    callback: (err, m) => {
      if (!err) m.respond(answer(m.data));
    },
  });
}

// callTool calls another module's tool, one its manifest lists under calls:, and resolves to the
// answer.
export async function callTool(nc, module, tool, request) {
  const answer = await nc.request(`mesh.mod.${module}.tool.${tool}`, request, { timeout: 5000 });
  return answer.data;
}
