import type { ProviderConfig } from "../core/config/provider-config";
import { SshPool } from "../remote/ssh-pool";
import { ProviderRun } from "./provider-run";
import type { CompleteProvider, ResourceProvider } from "./resource-provider";

/**
 * The run this process serves. The SDK's dynamic-provider plugin serves every
 * dynamic resource of one engine run from one process, and loads each kind's
 * provider module on its own (components/dynamic-provider.ts): nothing but the
 * process connects the service's provider with the readiness check's, so the
 * run (its pool, its shared looks) is held here, once, and handed to each
 * verb as it is called. It is the one piece of process-wide state under
 * providers/ and remote/ (tests/providers/module-state.test.ts allows this
 * one and no other); tests build their own ProviderRun instead.
 */
const thisProcess: { run?: ProviderRun } = {};

/** This process's run, made at its first use. */
export function processRun(): ProviderRun {
    return (thisProcess.run ??= new ProviderRun({ pool: new SshPool() }));
}

/**
 * The stack config for this process's run, from the provider module's
 * `configure` (components/dynamic-provider.ts): the SDK's dynamic provider
 * calls it once per provider module before any other method.
 */
export function configureProviders(config: ProviderConfig): void {
    processRun().configure(config);
}

/**
 * The provider the plugin calls (`providers/<kind>.ts` `provider`): each verb
 * runs the kind's provider for this process's run.
 */
export function servedByThisProcess<I, O>(make: (run: ProviderRun) => CompleteProvider<I, O>): CompleteProvider<I, O> {
    return {
        check: (olds, news) => make(processRun()).check(olds, news),
        diff: (id, olds, news) => make(processRun()).diff(id, olds, news),
        create: (inputs) => make(processRun()).create(inputs),
        read: (id, props) => make(processRun()).read(id, props),
        update: (id, olds, news) => make(processRun()).update(id, olds, news),
        delete: (id, props) => make(processRun()).delete(id, props),
    } satisfies ResourceProvider<I, O>;
}
