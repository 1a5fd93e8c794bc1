import assert from "node:assert/strict";
import { chooseSshCredentials, keyFileModeProblem } from "../../core/secrets/ssh-credentials";

describe("SSH credentials: where the key comes from", () => {
    it("uses ssh-agent when neither the secret nor a key file is set", () => {
        assert.deepEqual(chooseSshCredentials({ secretSet: false, agentSocket: "/run/user/1000/ssh-agent.sock" }), {
            kind: "agent",
            socket: "/run/user/1000/ssh-agent.sock",
        });
    });

    it("prefers the secret, then the key file, over the agent", () => {
        assert.deepEqual(chooseSshCredentials({ secretSet: true, keyPath: "~/.ssh/id_ed25519", agentSocket: "/s" }), { kind: "secret" });
        assert.deepEqual(chooseSshCredentials({ secretSet: false, keyPath: "~/.ssh/id_ed25519", agentSocket: "/s" }), {
            kind: "key-file",
            path: "~/.ssh/id_ed25519",
        });
    });

    it("says how to provide a key when there is none, agent first", () => {
        const none = chooseSshCredentials({ secretSet: false });
        assert.equal(none.kind, "none");
        assert.match(none.kind === "none" ? none.message : "", /SSH_AUTH_SOCK is not set.*ssh-add ~\/\.ssh\/id_ed25519.*host\.sshPrivateKeyPath/);
    });
});

describe("SSH credentials: the key file's mode", () => {
    it("accepts 0600 and 0400 (the st_mode file-type bits aside)", () => {
        assert.equal(keyFileModeProblem("/root/.ssh/id_ed25519", 0o100600), undefined);
        assert.equal(keyFileModeProblem("/root/.ssh/id_ed25519", 0o100400), undefined);
    });

    it("refuses a 0644 key, naming the path, the mode and the chmod that fixes it", () => {
        const problem = keyFileModeProblem("/root/.ssh/id_ed25519", 0o100644) ?? "";
        assert.match(problem, /\/root\/\.ssh\/id_ed25519 \(sglang-serve:host\.sshPrivateKeyPath\) has mode 0644 \(group or others may read it\)/);
        assert.match(problem, /must be 0600 or 0400/);
        assert.match(problem, /chmod 600 \/root\/\.ssh\/id_ed25519/);
    });

    it("refuses group-readable and other owner modes too", () => {
        for (const mode of [0o640, 0o604, 0o700, 0o666]) assert.notEqual(keyFileModeProblem("/k", mode), undefined, mode.toString(8));
    });
});
