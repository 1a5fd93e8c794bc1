import assert from "node:assert/strict";
import { flagMap } from "../../core/sglang/flag-map";

describe("flag map: a command line as the preview shows it", () => {
    it("splits the command from the flags and maps switches to true and one value to itself, in either form", () => {
        assert.deepEqual(flagMap(["/v/bin/sglang", "serve", "--tp-size", "2", "--port=30000", "--enable-metrics"]), {
            command: ["/v/bin/sglang", "serve"],
            flags: { "--tp-size": "2", "--port": "30000", "--enable-metrics": "true" },
        });
    });

    it("maps a flag with several values to them joined by spaces, not to further flags", () => {
        const { flags } = flagMap(["/v/bin/sglang", "serve", "--cuda-graph-bs", "1", "2", "4", "8", "--x", "-1"]);
        assert.deepEqual(flags, { "--cuda-graph-bs": "1 2 4 8", "--x": "-1" });
    });

    it("keeps = inside a value, and shows a value with whitespace as a JSON string so it differs from several values", () => {
        const json = '{"rope_scaling": {"factor": 4.0}}';
        const { flags } = flagMap(["/bin/x", "--json-model-override-args", json, "--lora-paths", "a=/p", "--a", "1 2", "--b", "1", "2"]);
        assert.equal(flags["--json-model-override-args"], JSON.stringify(json));
        assert.equal(flags["--lora-paths"], "a=/p");
        assert.notEqual(flags["--a"], flags["--b"]);
        assert.equal(flags["--a"], '"1 2"');
        assert.equal(flags["--b"], "1 2");
    });

    it("shows the last occurrence of a repeated flag, the one argparse keeps", () => {
        assert.deepEqual(flagMap(["/bin/x", "--port", "1", "--port=2"]).flags, { "--port": "2" });
    });
});
