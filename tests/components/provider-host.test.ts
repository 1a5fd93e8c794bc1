import * as assert from "node:assert/strict";
import * as path from "node:path";
import * as grpc from "@grpc/grpc-js";
import { ProviderConnection } from "../../providers/host/service";

/* eslint-disable @typescript-eslint/no-require-imports */
const provrpc = require("@pulumi/pulumi/proto/provider_grpc_pb");
const provproto = require("@pulumi/pulumi/proto/provider_pb");
const statusproto = require("@pulumi/pulumi/proto/status_pb");
const structproto = require("google-protobuf/google/protobuf/struct_pb");
/* eslint-enable @typescript-eslint/no-require-imports */

type Props = Record<string, unknown>;

// A provider module as a resource's `__provider` carries one, reading the
// connection's config and output through providers/context as ours do.
const context = JSON.stringify(path.resolve(__dirname, "../../providers/context"));
const MODULE = `
const context = require(${context});
exports.handler = () => ({
    async check(olds, news) {
        return { inputs: { ...news, checked: true }, failures: news.bad ? [{ property: "bad", reason: "bad is not allowed" }] : [] };
    },
    async diff(id, olds, news) { return { changes: olds.v !== news.v, replaces: news.replace ? ["v"] : [] }; },
    async create(inputs) {
        context.say("creating " + inputs.name);
        if (inputs.fail) {
            const e = new Error("created but never became ready");
            Object.assign(e, { id: "id-" + inputs.name, properties: { half: true }, reasons: ["not ready"] });
            throw e;
        }
        return { id: "id-" + inputs.name, outs: { ...inputs, keySeen: context.sshPrivateKey().key } };
    },
    async read(id, props) {
        await new Promise((r) => setTimeout(r, 30));
        context.say("read " + id);
        return { id, props: { ...props, keySeen: context.sshPrivateKey().key } };
    },
});
`;

interface Client {
    call<T>(method: string, req: unknown): Promise<T>;
    close(): void;
}

function client(port: number): Client {
    const c = new provrpc.ResourceProviderClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    return {
        call: <T>(method: string, req: unknown) =>
            new Promise<T>((resolve, reject) => c[method](req, (err: Error | null, resp: T) => (err ? reject(err) : resolve(resp)))),
        close: () => c.close(),
    };
}

const struct = (o: Props) => structproto.Struct.fromJavaScript(o);

async function connect(key: string, lines: string[]) {
    const connection = new ProviderConnection({ out: (l) => lines.push(`out: ${l}`), err: (l) => lines.push(`err: ${l}`) });
    const server = await connection.listen();
    const c = client(server.port);
    const configure = new provproto.ConfigureRequest();
    configure.setArgs(struct({ "sglang-serve:sshPrivateKey": key, "sglang-serve:host": "{}" }));
    await c.call("configure", configure);
    return { c, close: () => (c.close(), server.close()) };
}

function create(props: Props) {
    const req = new provproto.CreateRequest();
    req.setUrn("urn:pulumi:lab::sglang-serve::test::x");
    req.setProperties(struct({ ...props, __provider: MODULE }));
    return req;
}

describe("provider host: the gRPC provider of one engine connection", () => {
    const opened: Array<() => void> = [];
    afterEach(() => opened.splice(0).forEach((close) => close()));

    it("creates through the resource's provider module, with this connection's config and output", async () => {
        const lines: string[] = [];
        const { c, close } = await connect("KEY-A", lines);
        opened.push(close);
        const resp = await c.call<{ getId(): string; getProperties(): { toJavaScript(): Props } }>("create", create({ name: "a" }));
        assert.equal(resp.getId(), "id-a");
        const outs = resp.getProperties().toJavaScript();
        assert.equal(outs.keySeen, "KEY-A");
        assert.equal(outs.__provider, MODULE, "the provider module stays in the outputs");
        assert.deepEqual(lines, ["out: creating a"]);
    });

    it("keeps two connections' config and output apart while their calls interleave", async () => {
        const linesA: string[] = [];
        const linesB: string[] = [];
        const a = await connect("KEY-A", linesA);
        const b = await connect("KEY-B", linesB);
        opened.push(a.close, b.close);
        const read = (id: string) => {
            const req = new provproto.ReadRequest();
            req.setId(id);
            req.setUrn("urn:pulumi:lab::sglang-serve::test::x");
            req.setProperties(struct({ __provider: MODULE }));
            return req;
        };
        type ReadResp = { getProperties(): { toJavaScript(): Props } };
        const [ra, rb] = await Promise.all([a.c.call<ReadResp>("read", read("one")), b.c.call<ReadResp>("read", read("two"))]);
        assert.equal(ra.getProperties().toJavaScript().keySeen, "KEY-A");
        assert.equal(rb.getProperties().toJavaScript().keySeen, "KEY-B");
        assert.deepEqual(linesA, ["out: read one"]);
        assert.deepEqual(linesB, ["out: read two"]);
    });

    it("reports a create that failed after the resource existed as an initialization failure with its id", async () => {
        const { c, close } = await connect("KEY-A", []);
        opened.push(close);
        const err = await c.call("create", create({ name: "b", fail: true })).then(
            () => assert.fail("create should fail"),
            (e: grpc.ServiceError) => e,
        );
        assert.match(err.details, /never became ready/);
        const [bin] = err.metadata.get("grpc-status-details-bin") as Buffer[];
        const status = statusproto.Status.deserializeBinary(new Uint8Array(bin));
        const detail = provproto.ErrorResourceInitFailed.deserializeBinary(status.getDetailsList()[0].getValue_asU8());
        assert.equal(detail.getId(), "id-b");
        assert.deepEqual(detail.getReasonsList(), ["not ready"]);
        assert.deepEqual(detail.getProperties().toJavaScript(), { half: true });
    });

    it("checks and diffs as the SDK's dynamic provider does, and leaves provider config to the engine", async () => {
        const { c, close } = await connect("KEY-A", []);
        opened.push(close);
        const check = new provproto.CheckRequest();
        check.setUrn("urn:pulumi:lab::sglang-serve::test::x");
        check.setOlds(struct({}));
        check.setNews(struct({ bad: true, __provider: MODULE }));
        type CheckResp = { getInputs(): { toJavaScript(): Props }; getFailuresList(): { getProperty(): string; getReason(): string }[] };
        const checked = await c.call<CheckResp>("check", check);
        assert.deepEqual(checked.getInputs().toJavaScript(), { bad: true, checked: true, __provider: MODULE });
        assert.deepEqual(
            checked.getFailuresList().map((f) => [f.getProperty(), f.getReason()]),
            [["bad", "bad is not allowed"]],
        );

        const diff = new provproto.DiffRequest();
        diff.setId("id-x");
        diff.setUrn("urn:pulumi:lab::sglang-serve::test::x");
        diff.setOlds(struct({ v: 1, __provider: MODULE }));
        diff.setNews(struct({ v: 2, replace: true, __provider: MODULE }));
        type DiffResp = { getChanges(): number; getReplacesList(): string[] };
        const d = await c.call<DiffResp>("diff", diff);
        assert.equal(d.getChanges(), provproto.DiffResponse.DiffChanges.DIFF_SOME);
        assert.deepEqual(d.getReplacesList(), ["v"]);

        const err = await c.call("checkConfig", new provproto.CheckRequest()).then(
            () => assert.fail("CheckConfig should be unimplemented"),
            (e: grpc.ServiceError) => e,
        );
        assert.equal(err.code, grpc.status.UNIMPLEMENTED);
    });
});
