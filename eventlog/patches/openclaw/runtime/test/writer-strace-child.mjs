// Child of writer-durability.test.mjs, run under strace: opens the writer on argv[2] with the fsync policy argv[3]
// (argv[4] "thread" runs it in its worker thread) and runs the steps of the JSON plan argv[5]. After each step's promise
// has resolved it writes "ACK <step>\n" to stdout with a plain write(2), so the trace shows what happened before the
// writer acknowledged the step.
import { writeSync } from "node:fs";
import { openEventLog } from "../writer.mjs";
import { checkpoint } from "../writer-head.mjs";

const [root, fsync, mode, plan] = process.argv.slice(2);
if (!plan) { // not a test file: never open a writer on the default root
  process.stderr.write("usage: writer-strace-child.mjs ROOT FSYNC main|thread PLAN_JSON\n");
  process.exit(2);
}
const log = await openEventLog({ root, fsync, thread: mode === "thread", warn: (l) => process.stderr.write(l + "\n") });
for (const [k, step] of JSON.parse(plan).entries()) {
  if (step.op === "append") await log.append(step.event);
  else if (step.op === "many") await log.appendMany(step.events);
  else if (step.op === "stream") await log.appendStream(step.rel, step.event);
  else if (step.op === "checkpoint") await checkpoint(log);
  else throw new Error(`unknown step ${step.op}`);
  writeSync(1, `ACK ${k}\n`);
}
await log.close();
