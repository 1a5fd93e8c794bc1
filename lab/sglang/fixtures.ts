// Model folders the lab and the tests use (config.json only), e.g. the real
// Qwen3.6-27B config.json under fixtures/qwen3.6-27b.
import * as fs from "fs";
import * as path from "path";

/** A model folder under lab/sglang/fixtures/ (also when this file runs compiled from dist/lab/<build>/). */
export function fixtureModelPath(name: string): string {
    let dir = __dirname;
    while (dir !== path.dirname(dir)) {
        const candidate = path.join(dir, "lab", "sglang", "fixtures");
        if (fs.existsSync(candidate)) return path.join(candidate, name);
        dir = path.dirname(dir);
    }
    throw new Error(`lab/sglang/fixtures not found above ${__dirname}`);
}
