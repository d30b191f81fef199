// The two modules of docs/modules.md ("Writing a module") written with nats.js, run against their
// catalogue (../catalogue) on a bus meshc made:
//
//   MESH_MACHINE=box NATS_URL=… NATS_PASSWORD=… NATS_SERVE_PASSWORD=… node main.mjs indexer
//   MESH_MACHINE=box NATS_URL=… NATS_PASSWORD=… node main.mjs uploader cat.jpg dog.jpg
//
// The indexer consumes the photos announced, serves the search and renders thumbnails until it is
// stopped; the uploader announces each photo, submits its thumbnail, and searches the index until
// it holds them all.
import { jetstream } from "@nats-io/jetstream";
import { connect } from "./connect.mjs";
import { consumeEvents, publishEvent } from "./events.mjs";
import { callTool, connectServing, serveTool } from "./tools.mjs";
import { submitWork, takeWork } from "./work.mjs";

const text = (data) => new TextDecoder().decode(data);

// indexer consumes uploader's photo.added, serves search, and holds the seat thumbnails.
async function indexer() {
  const nc = await connect("indexer");
  const serving = await connectServing("indexer");
  const js = jetstream(nc);
  const photos = [];
  serveTool(serving, "indexer", "search", (query) => photos.filter((p) => p.includes(text(query))).join(" "));
  const events = await consumeEvents(js, "indexer", (m) => {
    photos.push(text(m.data));
    console.log(`indexed ${text(m.data)}`);
  });
  const work = await takeWork(js, "thumbnails", (m) => console.log(`rendered ${text(m.data)}`));
  console.log("indexer: ready");
  await new Promise((resolve) => ["SIGINT", "SIGTERM"].forEach((s) => process.once(s, resolve)));
  await serving.drain();
  await events.stop();
  await work.stop();
  await nc.drain();
}

// uploader announces each photo, submits its thumbnail to the seat, and asks the indexer's search
// until the index holds them all (it catches up as the indexer consumes the events).
async function uploader(names) {
  const nc = await connect("uploader");
  const js = jetstream(nc);
  for (const name of names) {
    await publishEvent(js, "uploader", "photo.added", name);
    await submitWork(js, "thumbnails", "render", name);
    console.log(`uploaded ${name}`);
  }
  const deadline = Date.now() + 30_000;
  for (;;) {
    const found = text(await callTool(nc, "indexer", "search", "")).split(" ").filter(Boolean);
    if (found.length >= names.length) {
      console.log(`search: ${found.join(" ")}`);
      break;
    }
    if (Date.now() > deadline) throw new Error(`the index never held every photo (last answer ${found})`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await nc.drain();
}

const [command, ...args] = process.argv.slice(2);
if (command === "indexer" && args.length === 0) {
  await indexer();
} else if (command === "uploader" && args.length > 0) {
  await uploader(args);
} else {
  console.error("usage: node main.mjs indexer | node main.mjs uploader PHOTO...");
  process.exit(1);
}
