// The dynamic-provider gRPC service (pulumirpc.ResourceProvider) for one
// engine connection: what @pulumi/pulumi/cmd/dynamic-provider serves, with
// the same semantics (the provider module in `__provider`, kept in the
// outputs; UNIMPLEMENTED for CheckConfig/DiffConfig; ErrorResourceInitFailed
// details for partial creates and updates), but state per connection instead
// of per process, so one process can serve many engine runs
// (providers/host/main.ts). It loads gRPC and the generated protobuf modules
// only, not the SDK's runtime (which loads the TypeScript compiler).
import * as grpc from "@grpc/grpc-js";
import { PROVIDER_CONFIG_KEYS, ProviderConfig } from "../../core/provider-config";
import { ProviderScope, providerScopes } from "../context";

/* eslint-disable @typescript-eslint/no-require-imports */
const provrpc = require("@pulumi/pulumi/proto/provider_grpc_pb");
const provproto = require("@pulumi/pulumi/proto/provider_pb");
const plugproto = require("@pulumi/pulumi/proto/plugin_pb");
const statusproto = require("@pulumi/pulumi/proto/status_pb");
const structproto = require("google-protobuf/google/protobuf/struct_pb");
const emptyproto = require("google-protobuf/google/protobuf/empty_pb");
const anyproto = require("google-protobuf/google/protobuf/any_pb");
const sdkVersion: string = require("@pulumi/pulumi/version").version;
/* eslint-enable @typescript-eslint/no-require-imports */

const PROVIDER_KEY = "__provider";
/** The engine's marker for a value not known during preview (@pulumi/pulumi/runtime/rpc unknownValue). */
const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";
/** A secret wrapped for RPC (@pulumi/pulumi/runtime/rpc specialSigKey / specialSecretSig). */
const SIG_KEY = "4dabf18193072939515e22adb298388d";
const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";

type Props = Record<string, unknown>;

interface DynamicProvider {
    configure?(req: { config: { get(key: string): unknown } }): Promise<void>;
    check?(olds: Props, news: Props): Promise<{ inputs?: Props; failures?: { property: string; reason: string }[] }>;
    diff?(id: string, olds: Props, news: Props): Promise<{ changes?: boolean; replaces?: string[]; deleteBeforeReplace?: boolean }>;
    create(inputs: Props): Promise<{ id: string; outs?: Props }>;
    read?(id: string, props: Props): Promise<{ id: string; props?: Props; inputs?: Props }>;
    update?(id: string, olds: Props, news: Props): Promise<{ outs?: Props }>;
    delete?(id: string, props: Props): Promise<void>;
}

/** Where one connection's output goes: the engine shows stdout lines as info and stderr lines as info on stderr. */
export interface ProviderOutput {
    out(line: string): void;
    err(line: string): void;
}

/** A request's google.protobuf.Struct as a plain object. */
function plain(struct: unknown): Props {
    return (struct as { toJavaScript(): Props }).toJavaScript();
}

function unwrapSecret(value: unknown): unknown {
    const v = value as Props | null;
    return v && typeof v === "object" && v[SIG_KEY] === SECRET_SIG ? v.value : value;
}

/** What the providers read from the stack config (core/provider-config.ts). */
export function providerConfigFrom(config: Props): ProviderConfig {
    const out: ProviderConfig = {};
    for (const [field, key] of Object.entries(PROVIDER_CONFIG_KEYS) as Array<[keyof ProviderConfig, string]>) {
        if (typeof config[key] === "string") out[field] = config[key] as string;
    }
    return out;
}

/** Loads a provider module's text as `require-from-string` does: a module of its own, resolved from the project. */
function moduleFromString(text: string, filename: string): { handler(): DynamicProvider } {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const Module = require("module") as {
        new (id: string): { filename: string; paths: string[]; exports: unknown; _compile(text: string, filename: string): void };
        _nodeModulePaths(dir: string): string[];
    };
    const m = new Module(filename);
    m.filename = filename;
    m.paths = Module._nodeModulePaths(process.cwd());
    m._compile(text, filename);
    return m.exports as { handler(): DynamicProvider };
}

function grpcError(e: unknown): grpc.ServiceError {
    const err = e as Error & { id?: string; properties?: Props; reasons?: string[] };
    const metadata = new grpc.Metadata();
    if (err && err.id) {
        // Created but not initialized (e.g. a rollout that was rolled back): the engine keeps the id and properties.
        const detail = new provproto.ErrorResourceInitFailed();
        detail.setId(err.id);
        detail.setProperties(structproto.Struct.fromJavaScript(err.properties || {}));
        detail.setReasonsList(err.reasons || []);
        const any = new anyproto.Any();
        any.pack(detail.serializeBinary(), "pulumirpc.ErrorResourceInitFailed");
        const status = new statusproto.Status();
        status.setCode(grpc.status.UNKNOWN);
        status.setMessage(err.message);
        status.addDetails(any);
        metadata.add("grpc-status-details-bin", Buffer.from(status.serializeBinary()));
    }
    return Object.assign(new Error(err?.message ?? String(e)), { code: grpc.status.UNKNOWN, details: err?.message ?? String(e), metadata });
}

type Callback = (err: grpc.ServiceError | null, value?: unknown, metadata?: grpc.Metadata) => void;
type Call = { request: { [k: string]: () => unknown } };

/** The ResourceProvider service for one engine connection. */
export class ProviderConnection {
    private readonly providers = new Map<string, DynamicProvider>();
    readonly scope: ProviderScope;

    constructor(private readonly output: ProviderOutput) {
        this.scope = { config: {}, say: (m) => output.out(m) };
    }

    private provider(props: Props): DynamicProvider {
        const text = props[PROVIDER_KEY];
        if (typeof text !== "string") throw new Error("the resource has no dynamic provider (__provider)");
        let p = this.providers.get(text);
        if (!p) {
            p = moduleFromString(text, `${process.cwd()}/__provider.js`).handler();
            this.providers.set(text, p);
        }
        return p;
    }

    /** Runs one call in this connection's scope; failures become gRPC errors, logged as the SDK's host logs them. */
    private serve(callback: Callback, fn: () => Promise<unknown>, opts: { initErrors?: boolean } = {}): void {
        providerScopes().run(this.scope, () =>
            fn().then(
                (resp) => callback(null, resp),
                (e) => {
                    if (!opts.initErrors) this.output.err(`${e}: ${(e as Error)?.stack ?? ""}`);
                    const err = grpcError(e);
                    callback(err, null, err.metadata);
                },
            ),
        );
    }

    private static unimplemented(method: string) {
        return (_call: unknown, callback: Callback) =>
            callback({ code: grpc.status.UNIMPLEMENTED, details: `${method} is not implemented by the dynamic provider` } as grpc.ServiceError);
    }

    /** The handlers grpc-js binds, one per RPC of pulumirpc.ResourceProvider. */
    handlers(): grpc.UntypedServiceImplementation {
        const un = ProviderConnection.unimplemented;
        return {
            cancel: (_call: Call, cb: Callback) => cb(null, new emptyproto.Empty()),
            getPluginInfo: (_call: Call, cb: Callback) => {
                const info = new plugproto.PluginInfo();
                info.setVersion(sdkVersion);
                cb(null, info);
            },
            configure: (call: Call, cb: Callback) =>
                this.serve(cb, async () => {
                    const args = (call.request.getArgs() as { toJavaScript(): Props } | undefined)?.toJavaScript();
                    if (!args) throw new Error("ConfigureRequest missing args");
                    const config: Props = {};
                    for (const [k, v] of Object.entries(args)) if (k !== PROVIDER_KEY) config[k] = unwrapSecret(v);
                    this.scope.config = providerConfigFrom(config);
                    const resp = new provproto.ConfigureResponse();
                    resp.setAcceptsecrets(false);
                    return resp;
                }),
            invoke: (call: Call, cb: Callback) => cb({ code: grpc.status.UNIMPLEMENTED, details: `unknown function ${call.request.getTok()}` } as grpc.ServiceError),
            check: (call: Call, cb: Callback) =>
                this.serve(cb, async () => {
                    const olds = plain(call.request.getOlds());
                    const news = plain(call.request.getNews());
                    const p = this.provider(news[PROVIDER_KEY] === UNKNOWN ? olds : news);
                    const result = p.check ? await p.check(olds, news) : { inputs: news };
                    const inputs = { ...(result.inputs ?? news), [PROVIDER_KEY]: news[PROVIDER_KEY] };
                    const resp = new provproto.CheckResponse();
                    resp.setInputs(structproto.Struct.fromJavaScript(inputs));
                    resp.setFailuresList(
                        (result.failures ?? []).map((f) => {
                            const failure = new provproto.CheckFailure();
                            failure.setProperty(f.property);
                            failure.setReason(f.reason);
                            return failure;
                        }),
                    );
                    return resp;
                }),
            diff: (call: Call, cb: Callback) =>
                this.serve(cb, async () => {
                    const olds = plain(call.request.getOlds());
                    const news = plain(call.request.getNews());
                    const p = this.provider(news[PROVIDER_KEY] === UNKNOWN ? olds : news);
                    const resp = new provproto.DiffResponse();
                    if (p.diff) {
                        const r = await p.diff(call.request.getId() as string, olds, news);
                        const C = provproto.DiffResponse.DiffChanges;
                        resp.setChanges(r.changes === true ? C.DIFF_SOME : r.changes === false ? C.DIFF_NONE : C.DIFF_UNKNOWN);
                        if (r.replaces?.length) resp.setReplacesList(r.replaces);
                        if (r.deleteBeforeReplace) resp.setDeletebeforereplace(true);
                    }
                    return resp;
                }),
            create: (call: Call, cb: Callback) =>
                this.serve(
                    cb,
                    async () => {
                        const props = plain(call.request.getProperties());
                        const r = await this.provider(props).create(props);
                        const resp = new provproto.CreateResponse();
                        resp.setId(r.id);
                        resp.setProperties(structproto.Struct.fromJavaScript({ ...(r.outs ?? {}), [PROVIDER_KEY]: props[PROVIDER_KEY] }));
                        return resp;
                    },
                    { initErrors: true },
                ),
            read: (call: Call, cb: Callback) =>
                this.serve(cb, async () => {
                    const id = call.request.getId() as string;
                    const props = plain(call.request.getProperties());
                    const p = this.provider(props);
                    const resp = new provproto.ReadResponse();
                    if (!p.read) {
                        resp.setId(id);
                        resp.setProperties(call.request.getProperties());
                        return resp;
                    }
                    // Keep __provider, so the resource's operations keep working after a refresh.
                    const r = await p.read(id, props);
                    resp.setId(r.id);
                    resp.setProperties(structproto.Struct.fromJavaScript({ ...(r.props ?? {}), [PROVIDER_KEY]: props[PROVIDER_KEY] }));
                    if (r.inputs) resp.setInputs(structproto.Struct.fromJavaScript({ ...r.inputs, [PROVIDER_KEY]: props[PROVIDER_KEY] }));
                    return resp;
                }),
            update: (call: Call, cb: Callback) =>
                this.serve(
                    cb,
                    async () => {
                        const olds = plain(call.request.getOlds());
                        const news = plain(call.request.getNews());
                        const p = this.provider(news);
                        const r = (p.update ? await p.update(call.request.getId() as string, olds, news) : undefined) ?? {};
                        const resp = new provproto.UpdateResponse();
                        resp.setProperties(structproto.Struct.fromJavaScript({ ...(r.outs ?? {}), [PROVIDER_KEY]: news[PROVIDER_KEY] }));
                        return resp;
                    },
                    { initErrors: true },
                ),
            delete: (call: Call, cb: Callback) =>
                this.serve(cb, async () => {
                    const props = plain(call.request.getProperties());
                    const p = this.provider(props);
                    if (p.delete) await p.delete(call.request.getId() as string, props);
                    return new emptyproto.Empty();
                }),
            checkConfig: un("CheckConfig"),
            diffConfig: un("DiffConfig"),
            list: (call: { emit(ev: string, err: unknown): void }) =>
                call.emit("error", { code: grpc.status.UNIMPLEMENTED, details: "List is not implemented by the dynamic provider" }),
            handshake: un("Handshake"),
            getSchema: un("GetSchema"),
            construct: un("Construct"),
            parameterize: un("Parameterize"),
            call: un("Call"),
            attach: un("Attach"),
            getMapping: un("GetMapping"),
            getMappings: un("GetMappings"),
        } as unknown as grpc.UntypedServiceImplementation;
    }

    /** Starts a gRPC server for this connection on 127.0.0.1 and returns its port (what the engine reads). */
    async listen(): Promise<{ port: number; close(): void }> {
        const server = new grpc.Server({ "grpc.max_receive_message_length": 1024 * 1024 * 400 });
        server.addService(provrpc.ResourceProviderService, this.handlers());
        const port = await new Promise<number>((resolve, reject) =>
            server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
        );
        return { port, close: () => server.forceShutdown() };
    }
}
