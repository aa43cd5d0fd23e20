// Log root resolution, identical to the Python side (eventlog path):
// $EVENTLOG_ROOT, else $OPENCLAW_STATE_DIR/eventlog, else ~/.openclaw/eventlog.
import { homedir } from "node:os";
import { join, resolve } from "node:path";

export function resolveRoot(env = process.env) {
  if (env.EVENTLOG_ROOT) return resolve(env.EVENTLOG_ROOT);
  if (env.OPENCLAW_STATE_DIR) return resolve(env.OPENCLAW_STATE_DIR, "eventlog");
  return join(env.HOME || homedir(), ".openclaw", "eventlog");
}
