// publishEvent announces one of the module's events on its derived subject,
// mesh.mod.<module>.event.<event>, and resolves once the stream EVENTS has stored it.
export async function publishEvent(js, module, event, data) {
  await js.publish(`mesh.mod.${module}.event.${event}`, data);
}

// consumeEvents binds the module's one durable consumer, EVENTS/<machine>_<module>, which meshc
// apply made with a filter for every event the manifest consumes, and hands each event to handle.
export async function consumeEvents(js, module, handle) {
  const consumer = await js.consumers.get("EVENTS", `${process.env.MESH_MACHINE}_${module}`);
  return handleEach(consumer, handle);
}

// handleEach hands each message a consumer delivers to handle, and acknowledges it once handled:
// until then the consumer holds it, and one given back (nak) when handle fails is delivered again.
export async function handleEach(consumer, handle) {
  const messages = await consumer.consume();
  (async () => {
    for await (const m of messages) {
      try {
        await handle(m);
        m.ack();
      } catch (err) {
        m.nak();
      }
    }
  })();
  return messages;
}
