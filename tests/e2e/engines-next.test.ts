import { describeSmokeSet } from "./engine-smoke-set";

// The smoke set under the next CLI, on a lab of its own (127.0.116.x).
describeSmokeSet("next", 116);
