import assert from "node:assert/strict";
import { rawStackConfig, SECRET_PRESENT, sshPrivateKeyPath, stackFileSource } from "../../core/config/stack-config-source";

describe("stack config source: one reader for the program, the providers and the stack files", () => {
    it("parses the object values Pulumi hands over as JSON text, and only the presence of the API key", () => {
        const values: Record<string, string> = {
            host: '{"name":"kpro5","address":"10.1.2.5"}',
            generateApiKey: "true",
            apiKey: "0123456789abcdef0123",
        };
        assert.deepEqual(
            rawStackConfig((n) => values[n]),
            {
                host: { name: "kpro5", address: "10.1.2.5" },
                generateApiKey: true,
                apiKey: SECRET_PRESENT,
            },
        );
    });

    it("takes the secrets' presence only, never their values (they are refused as config)", () => {
        for (const name of ["sshPrivateKey", "sshPrivateKeyPassphrase", "apiKey"]) {
            assert.equal(rawStackConfig((n) => (n === name ? "the-value-0123456789" : undefined))[name], SECRET_PRESENT, name);
        }
    });

    it("takes the SSH key's presence only, never its value", () => {
        assert.equal(rawStackConfig((n) => (n === "sshPrivateKey" ? "-----BEGIN OPENSSH PRIVATE KEY-----..." : undefined)).sshPrivateKey, SECRET_PRESENT);
    });

    it("reads a stack file's config map, an encrypted value as the stand-in", () => {
        const doc = { config: { "sglang-serve:service": { name: "qwen" }, "sglang-serve:apiKey": { secure: "v1:abc" }, "other:host": { name: "x" } } };
        assert.deepEqual(rawStackConfig(stackFileSource(doc, "STAND-IN")), { service: { name: "qwen" }, apiKey: SECRET_PRESENT });
    });

    it("gives the providers host.sshPrivateKeyPath, and nothing for a host section that is not an object", () => {
        assert.equal(
            sshPrivateKeyPath((n) => (n === "host" ? '{"sshPrivateKeyPath":"~/.ssh/id_ed25519"}' : undefined)),
            "~/.ssh/id_ed25519",
        );
        assert.equal(
            sshPrivateKeyPath((n) => (n === "host" ? "not json" : undefined)),
            undefined,
        );
        assert.equal(
            sshPrivateKeyPath(() => undefined),
            undefined,
        );
    });

    it("gives the providers the key path of the box whose host a connection reaches, when the stack declares boxes", () => {
        const boxes = JSON.stringify([
            { host: { address: "10.1.2.5", sshPrivateKeyPath: "~/.ssh/kpro5" } },
            { host: { address: "10.1.2.6", port: 2222, sshPrivateKeyPath: "~/.ssh/kpro6" } },
            { host: { address: "10.1.2.7" } },
        ]);
        const source = (n: string) => (n === "boxes" ? boxes : undefined);
        assert.equal(sshPrivateKeyPath(source, { address: "10.1.2.5", port: 22 }), "~/.ssh/kpro5");
        assert.equal(sshPrivateKeyPath(source, { address: "10.1.2.6", port: 2222 }), "~/.ssh/kpro6");
        assert.equal(sshPrivateKeyPath(source, { address: "10.1.2.6", port: 22 }), undefined, "another port is another host");
        assert.equal(sshPrivateKeyPath(source, { address: "10.1.2.7", port: 22 }), undefined, "a box without a key file: ssh-agent");
    });
});
