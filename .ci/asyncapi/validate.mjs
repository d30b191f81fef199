// Validates AsyncAPI documents with the AsyncAPI initiative's own parser (@asyncapi/parser), as
// .ci/run installs it: every diagnostic of severity error fails, and so does a warning, since
// meshc writes documents the parser should have nothing to say about.
//
//   node .ci/asyncapi-validate.mjs FILE...
import { readFileSync } from 'node:fs';
import { Parser } from '@asyncapi/parser';

const parser = new Parser();
let failed = false;
for (const file of process.argv.slice(2)) {
  const { document, diagnostics } = await parser.parse(readFileSync(file, 'utf8'), { source: file });
  for (const d of diagnostics) {
    // 0 error, 1 warning, 2 information, 3 hint (Spectral's severities).
    if (d.severity <= 1) {
      failed = true;
      console.error(`${file}: ${d.severity === 0 ? 'error' : 'warning'}: ${d.code}: ${d.message} at ${JSON.stringify(d.path)}`);
    }
  }
  if (!document) {
    failed = true;
    console.error(`${file}: the parser made no document of it`);
    continue;
  }
  console.log(`${file}: AsyncAPI ${document.version()}, ${document.channels().length} channels, ${document.operations().length} operations`);
}
process.exit(failed ? 1 : 0);
