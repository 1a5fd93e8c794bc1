import assert from "node:assert/strict";
import { API_KEY_VARIABLE, deploySecretsFrom, givesDeploySecrets, renderSecretFiles, SECRET_ENVIRONMENT_VARIABLE } from "../../core/secrets/deploy-secrets";

const KEY = "0123456789abcdef0123456789abcdef";
const both = { apiKey: true, environment: ["HF_TOKEN"] };

describe("deploy secrets: the values a deploy run gives", () => {
    it("takes the API key and the declared secret environment from the run's variables", () => {
        const r = deploySecretsFrom({ [API_KEY_VARIABLE]: KEY, [SECRET_ENVIRONMENT_VARIABLE]: "# tokens\nHF_TOKEN=hf_abc123\n\n" }, both);
        assert.deepEqual(r, { ok: true, secrets: { apiKey: KEY, environment: { HF_TOKEN: "hf_abc123" } } });
    });

    it("names every missing value, and never a value", () => {
        const r = deploySecretsFrom({}, both);
        assert.equal(r.ok, false);
        if (r.ok) return;
        assert.equal(r.problems.length, 2);
        assert.match(r.problems[0]!, /SGLANG_SERVE_API_KEY is not set/);
        assert.match(r.problems[1]!, /declares HF_TOKEN but SGLANG_SERVE_SECRET_ENVIRONMENT has no HF_TOKEN=\.\.\. line/);
    });

    it("refuses a short key, an undeclared name and a value the files cannot hold, quoting none of them", () => {
        const r = deploySecretsFrom({ [API_KEY_VARIABLE]: "short-key", [SECRET_ENVIRONMENT_VARIABLE]: "HF_TOKEN=has space\nOTHER_TOKEN=xyz123" }, both);
        assert.equal(r.ok, false);
        if (r.ok) return;
        const text = r.problems.join("\n");
        assert.match(text, /SGLANG_SERVE_API_KEY is 9 characters long/);
        assert.match(text, /the value of HF_TOKEN .* has characters outside/);
        assert.match(text, /gives OTHER_TOKEN, which service\.secretEnvironment does not declare/);
        for (const value of ["short-key", "has space", "xyz123"]) assert.ok(!text.includes(value), value);
    });

    it("asks nothing of a server that declares no secret", () => {
        assert.deepEqual(deploySecretsFrom({}, { apiKey: false, environment: [] }), { ok: true, secrets: { environment: {} } });
    });

    it("tells a run that gives secrets (a deploy) from one that gives none (a preview)", () => {
        assert.equal(givesDeploySecrets({}), false);
        assert.equal(givesDeploySecrets({ [API_KEY_VARIABLE]: KEY }), true);
        assert.equal(givesDeploySecrets({ [SECRET_ENVIRONMENT_VARIABLE]: "" }), true);
    });

    it("renders the 0600 files: the EnvironmentFile with the key for the on-box reads, SGLang's config file with the key", () => {
        const files = renderSecretFiles({ apiKey: KEY, environment: { HF_TOKEN: "hf_abc123" } });
        assert.equal(files.environmentFile, `# Managed by sglang-serve: secrets for the SGLang unit (mode 0600).\nHF_TOKEN=hf_abc123\nSGLANG_API_KEY=${KEY}\n`);
        assert.match(files.serverConfigFile!, new RegExp(`^api-key: "${KEY}"$`, "m"));
        assert.deepEqual(renderSecretFiles({ environment: { HF_TOKEN: "hf_abc123" } }).serverConfigFile, undefined);
        assert.deepEqual(renderSecretFiles({ environment: {} }), { environmentFile: undefined, serverConfigFile: undefined });
    });
});
