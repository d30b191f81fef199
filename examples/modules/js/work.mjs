import { handleEach } from "./events.mjs";

// submitWork hands work of one kind to a seat, mesh.seat.<seat>.accept.<kind>, and resolves once
// the seat's queue has stored it: it waits there until the seat's holder takes it.
export async function submitWork(js, seat, kind, data) {
  await js.publish(`mesh.seat.${seat}.accept.${kind}`, data);
}

// takeWork is the holder's side: it binds the consumer holder of the seat's queue, SEAT_<SEAT>
// (the seat's name upper-cased, - as _), and hands each piece of work to handle. Work
// acknowledged is gone from the queue; work given back is taken again.
export async function takeWork(js, seat, handle) {
  const queue = `SEAT_${seat.toUpperCase().replaceAll("-", "_")}`;
  const consumer = await js.consumers.get(queue, "holder");
  return handleEach(consumer, handle);
}
