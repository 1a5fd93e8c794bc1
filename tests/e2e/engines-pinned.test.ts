import { describeSmokeSet } from "./engine-smoke-set";

// The smoke set under the pinned CLI, on a lab of its own (127.0.115.x).
describeSmokeSet("pinned", 115);
