// The post-ready checks the readiness wait runs, in this order (post-ready-check.ts).
// The API key first: an open server is not rolled out however well it
// answers. Then the chat completion, then speculation (whose /server_info
// read the wait's result reuses), then the serving-quality gate: the prompt
// set's figures against the bounds and the last good config's.

import { apiKeyRefusedCheck } from "./api-key-refused";
import { chatCheck } from "./chat";
import type { PostReadyCheck } from "./post-ready-check";
import { servingQualityCheck } from "./serving-quality";
import { speculativeCheck } from "./speculative";

export const POST_READY_CHECKS: readonly PostReadyCheck[] = [apiKeyRefusedCheck, chatCheck, speculativeCheck, servingQualityCheck];
