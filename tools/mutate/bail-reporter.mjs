// node:test reporter for mutation runs: prints the first failing test and ends the process at once (the mutant is
// killed; the rest of the run would only cost time). With --test-isolation=none the tests run in this process, so
// exiting stops them too. A run without a failure prints "PASS <n>".
import { writeSync } from "node:fs";

export default async function* bail(source) {
  let passed = 0;
  for await (const ev of source) {
    if (ev.type === "test:fail" && !ev.data.skip && !ev.data.todo) {
      writeSync(1, `FAIL ${ev.data.file ?? "?"} :: ${ev.data.name}\n`);
      process.exit(1);
    }
    if (ev.type === "test:pass") passed += 1;
  }
  yield `PASS ${passed}\n`;
}
