import assert from "node:assert/strict";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { loadSshCredentials } from "../../remote/ssh-credentials";

describe("loading the SSH credentials of a provider run", () => {
    let dir: string;
    let keyFile: string;
    beforeEach(() => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-serve-keys-"));
        keyFile = path.join(dir, "id_ed25519");
        fs.writeFileSync(keyFile, "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n", { mode: 0o600 });
    });
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

    it("reads a 0600 key file", () => {
        const c = loadSshCredentials({ sshPrivateKeyPath: keyFile, sshPrivateKeyPassphrase: "pass" }, {});
        assert.match(c.privateKey ?? "", /BEGIN OPENSSH PRIVATE KEY/);
        assert.equal(c.passphrase, "pass");
        assert.equal(c.agent, undefined);
    });

    it("refuses a 0644 key file with the chmod that fixes it, without reading it into the message", () => {
        fs.chmodSync(keyFile, 0o644);
        assert.throws(
            () => loadSshCredentials({ sshPrivateKeyPath: keyFile }, {}),
            (e: Error) => /has mode 0644/.test(e.message) && e.message.includes(`chmod 600 ${keyFile}`) && !e.message.includes("AAAA"),
        );
    });

    it("uses the agent from SSH_AUTH_SOCK when no key is configured", () => {
        assert.deepEqual(loadSshCredentials({}, { SSH_AUTH_SOCK: "/tmp/ssh-x/agent.1" }), { agent: "/tmp/ssh-x/agent.1" });
    });

    it("uses a configured key file even when an agent runs", () => {
        assert.equal(loadSshCredentials({ sshPrivateKeyPath: keyFile }, { SSH_AUTH_SOCK: "/tmp/a" }).agent, undefined);
    });

    it("takes the secret key as it is", () => {
        assert.deepEqual(loadSshCredentials({ sshPrivateKey: "KEY" }, { SSH_AUTH_SOCK: "/tmp/a" }), { privateKey: "KEY", passphrase: undefined });
    });

    it("names the path when the key file cannot be read", () => {
        assert.throws(() => loadSshCredentials({ sshPrivateKeyPath: path.join(dir, "missing") }, {}), /cannot read the SSH private key at .*missing/);
    });

    it("fails with the three ways to give a key when there is none", () => {
        assert.throws(() => loadSshCredentials({}, {}), /no SSH credentials/);
    });
});
