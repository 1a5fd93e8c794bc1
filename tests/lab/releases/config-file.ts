import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { renderServerConfigFile } from "../../../core/unit/systemd-unit";
import { renderArgv, resolveLauncher } from "../../../core/sglang/args";
import { ServiceSchema } from "../../../core/config/schema";
import { ensureInstalled, runOracle, sglangVersions } from "../../../sglang-release/oracle";
import { fixtureModelPath } from "../../../lab/sglang/fixtures";
import { fieldConfig } from "../../core/fixtures";

// Issue 19, finding 4: the unit passes the API key as SGLang's own `--config`
// file, never on the command line. Every supported release's real
// prepare_server_args (sglang-release) reads the file the stack writes into
// ServerArgs.api_key, with the launcher the stack picks for that release.

const KEY = "config-file-test-key-0123456789";

describe("the API key in SGLang's --config file, read by the real releases", function () {
    this.timeout(300_000);
    let dir: string;
    before(async () => {
        await ensureInstalled();
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-config-file-"));
        fs.writeFileSync(path.join(dir, "qwen.yaml"), renderServerConfigFile(KEY), { mode: 0o600 });
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    for (const version of sglangVersions()) {
        it(`${version}: ServerArgs.api_key is the file's key, and the command line has none`, async () => {
            // The key is what matters here: no speculation (0.5.23 dropped --mamba-scheduler-strategy, 0.5.10+ need it with NEXTN).
            const { speculative: _s, mambaSchedulerStrategy: _m, ...plain } = fieldConfig().service;
            const service = ServiceSchema.parse({ ...plain, sglangVersion: version, model: { ...plain.model, path: fixtureModelPath("qwen3.6-27b") } });
            const argv = renderArgv(service, { configFile: path.join(dir, "qwen.yaml") });
            assert.ok(!argv.join(" ").includes(KEY));
            const entry = resolveLauncher(service) === "serve" ? "sglang-serve" : "launch-server";
            const [r] = await runOracle(version, [{ argv: argv.slice(argv.indexOf("--model-path")), entry }]);
            assert.equal(r!.serverArgs?.api_key, KEY, JSON.stringify(r).slice(0, 1500));
        });
    }
});
