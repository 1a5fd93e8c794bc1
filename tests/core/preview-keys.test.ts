import assert from "node:assert/strict";
import { API_KEY_VARIABLE, deploySecretsFrom, GATEWAY_ADMIN_KEY_VARIABLE, gatewayAdminKeyFrom, givenKeyProblems } from "../../core/secrets/deploy-secrets";

const KEY = "0123456789abcdef0123456789abcdef";
const both = { apiKey: true, gatewayAdminKey: true };

describe("deploy secrets: the keys a preview is given, judged as the deploy judges them (issue 34, finding 9)", () => {
    it("refuses a short API key with the deploy's own message, never quoting it", () => {
        const env = { [API_KEY_VARIABLE]: "short" };
        const problems = givenKeyProblems(env, both);
        const deploy = deploySecretsFrom(env, { apiKey: true, environment: [] });
        assert.ok(!deploy.ok);
        assert.deepEqual(problems, deploy.problems);
        assert.match(problems[0]!, /^SGLANG_SERVE_API_KEY is 5 characters long but must be 16-256: set a longer key/);
        assert.ok(!problems.join("\n").includes("short"));
    });

    it("refuses an API key with characters the 0600 files cannot hold, and an empty one", () => {
        assert.match(
            givenKeyProblems({ [API_KEY_VARIABLE]: `${KEY} ${KEY}` }, both)[0]!,
            /SGLANG_SERVE_API_KEY has characters other than letters, digits and \._~\+\/=-/,
        );
        assert.match(givenKeyProblems({ [API_KEY_VARIABLE]: "" }, both)[0]!, /SGLANG_SERVE_API_KEY is empty, and SGLang treats an empty --api-key as no key/);
    });

    it("refuses a short gateway admin key with the gateway deploy's message", () => {
        const env = { [API_KEY_VARIABLE]: KEY, [GATEWAY_ADMIN_KEY_VARIABLE]: "adm-short" };
        const deploy = gatewayAdminKeyFrom(env);
        assert.ok(!deploy.ok);
        assert.deepEqual(givenKeyProblems(env, both), [deploy.problem]);
        assert.match(deploy.problem, /^SGLANG_SERVE_GATEWAY_ADMIN_KEY is 9 characters long but must be 16-256/);
    });

    it("asks nothing of a run that gives no key (a pull request's preview), and takes good keys", () => {
        assert.deepEqual(givenKeyProblems({}, both), []);
        assert.deepEqual(givenKeyProblems({ [API_KEY_VARIABLE]: KEY, [GATEWAY_ADMIN_KEY_VARIABLE]: KEY }, both), []);
    });

    it("judges only the keys the stack's deploy reads: the API key when a server requires it, the admin key with a gateway", () => {
        const env = { [API_KEY_VARIABLE]: "short", [GATEWAY_ADMIN_KEY_VARIABLE]: "short" };
        assert.deepEqual(givenKeyProblems(env, { apiKey: false, gatewayAdminKey: false }), []);
        assert.equal(givenKeyProblems(env, { apiKey: true, gatewayAdminKey: false }).length, 1);
        assert.equal(givenKeyProblems(env, { apiKey: false, gatewayAdminKey: true }).length, 1);
    });
});
