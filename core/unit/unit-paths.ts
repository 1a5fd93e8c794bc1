/**
 * Where a server's files are on the box: its systemd unit, its 0600
 * EnvironmentFile and SGLang's own config file, each named by the server.
 * What the unit (core/unit/systemd-unit.ts), the venvs (core/venv/venv-layout.ts)
 * and the reads of the box share.
 */
export const UNIT_DIRECTORY = "/etc/systemd/system";
export const ENVIRONMENT_DIRECTORY = "/etc/sglang";
/** The EnvironmentFile holds the API key: readable by root only. Setting the mode is the writer's job. */
export const ENVIRONMENT_FILE_MODE = 0o600;

export function unitName(serviceName: string): string {
    return `sglang-${serviceName}.service`;
}

export function unitPath(serviceName: string): string {
    return `${UNIT_DIRECTORY}/${unitName(serviceName)}`;
}

export function environmentFilePath(serviceName: string): string {
    return `${ENVIRONMENT_DIRECTORY}/${serviceName}.env`;
}

/** SGLang's own config file (`--config`, YAML, mode 0600): it carries the API key, off the command line. */
export function serverConfigFilePath(serviceName: string): string {
    return `${ENVIRONMENT_DIRECTORY}/${serviceName}.yaml`;
}
