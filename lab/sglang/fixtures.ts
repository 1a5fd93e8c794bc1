// Model folders the lab and the tests use (config.json only), e.g. the real
// Qwen3.6-27B config.json under fixtures/qwen3.6-27b.
import * as path from "path";
import { repoDir } from "../lab-info";

/** A model folder under lab/sglang/fixtures/. */
export function fixtureModelPath(name: string): string {
    return path.join(repoDir(), "lab", "sglang", "fixtures", name);
}
