import * as assert from "node:assert/strict";
import * as path from "node:path";
import { providerModuleSource } from "../../components/dynamic-provider";
import { configureProviders, processRun } from "../../providers/context";
import { ProviderRun } from "../../providers/provider-run";
import { SshPool } from "../../remote/ssh-pool";

/** Loads the module text the way a dynamic-provider host does (requireFromString): fresh scope, real require. */
function loadModule(text: string): { handler(): Record<string, (...args: unknown[]) => Promise<unknown>> } {
    const module = { exports: {} as Record<string, unknown> };
    new Function("module", "exports", "require", text)(module, module.exports, require);
    return module.exports as never;
}

describe("the dynamic-provider module stored in state", () => {
    const root = path.resolve(__dirname, "../..");
    let savedRoot: string | undefined;
    before(() => {
        savedRoot = process.env.SGLANG_SERVE_ROOT;
        process.env.SGLANG_SERVE_ROOT = root;
    });
    after(() => {
        if (savedRoot === undefined) delete process.env.SGLANG_SERVE_ROOT;
        else process.env.SGLANG_SERVE_ROOT = savedRoot;
    });

    it("forwards to the project's implementation of its kind", async () => {
        const provider = loadModule(providerModuleSource("gpu-host")).handler();
        const expected = { count: 2, name: "NVIDIA RTX A6000", memoryMiB: 49140 };
        const gpus = [0, 1].map((index) => ({ index, name: "NVIDIA RTX A6000", memoryMiB: 49140, uuid: `GPU-${index}` }));
        const olds = { providerVersion: "v", connection: { address: "10.1.2.5" }, expectedGpus: expected, gpus };
        const same = (await provider.diff("id", olds, { ...olds, gpus: undefined })) as { changes: boolean };
        assert.equal(same.changes, false);
        const fewer = (await provider.diff("id", olds, { ...olds, expectedGpus: { ...expected, count: 1 } })) as { changes: boolean };
        assert.equal(fewer.changes, true);
    });

    it("hands the credentials from configure to the providers, in memory only", async () => {
        const provider = loadModule(providerModuleSource("readiness-check")).handler();
        const config: Record<string, string> = { "sglang-serve:sshPrivateKey": "KEY", "sglang-serve:sshPrivateKeyPassphrase": "PASS" };
        try {
            await provider.configure({ config: { get: (k: string) => config[k] } });
            assert.deepEqual(processRun().sshCredentials(), { privateKey: "KEY", passphrase: "PASS" });
        } finally {
            configureProviders({});
        }
    });

    it("serves every kind in one process from one run: one pool, one config", async () => {
        const config: Record<string, string> = { "sglang-serve:sshPrivateKey": "KEY" };
        const run = processRun();
        try {
            for (const kind of ["gpu-host", "sglang-service", "readiness-check"] as const) {
                await loadModule(providerModuleSource(kind))
                    .handler()
                    .configure({ config: { get: (k: string) => config[k] } });
            }
            assert.equal(processRun(), run);
            assert.equal(processRun().pool, run.pool);
            assert.equal(run.sshCredentials().privateKey, "KEY");
        } finally {
            configureProviders({});
        }
    });

    it("reads the config a sglang-serve/2 provider module kept in a global when nothing configured the run", () => {
        const g = globalThis as { __sglangServeProviderConfig?: unknown };
        g.__sglangServeProviderConfig = { sshPrivateKey: "OLD-KEY" };
        try {
            const run = new ProviderRun({ pool: new SshPool({ log: () => undefined }) });
            assert.equal(run.sshCredentials().privateKey, "OLD-KEY");
            run.configure({ sshPrivateKey: "NEW-KEY" });
            assert.equal(run.sshCredentials().privateKey, "NEW-KEY");
        } finally {
            delete g.__sglangServeProviderConfig;
        }
    });

    it("loads the providers from their TypeScript source, not from a build output", () => {
        const text = providerModuleSource("sglang-service");
        assert.match(text, /path\.join\(root, "providers", name \+ "\.ts"\)/);
        assert.doesNotMatch(text, /\.build/);
    });

    it("is the same text for a kind and names it", () => {
        const text = providerModuleSource("sglang-service");
        assert.equal(text, providerModuleSource("sglang-service"));
        assert.match(text, /const kind = "sglang-service";/);
        assert.notEqual(text, providerModuleSource("gpu-host"));
    });
});
