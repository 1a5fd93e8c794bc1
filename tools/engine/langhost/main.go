// Command pulumi-language-nodejs is a minimal Node.js language host for the
// Pulumi engine, written for this project because the official host module
// (github.com/pulumi/pulumi/sdk/nodejs/cmd/pulumi-language-nodejs/v3) is not
// served by the Go module proxy this project can reach.
//
// It implements the part of the LanguageRuntime protocol that `pulumi
// preview|up|refresh|destroy` use with a TypeScript program: it reports the
// resource plugins that the program's node_modules declare, and runs the
// program through the SDK's own entrypoint (@pulumi/pulumi/cmd/run), with the
// same flags and environment variables the SDK reads. Everything the program
// does (registering resources, closures for dynamic providers) is the real
// @pulumi/pulumi SDK talking to the real engine.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
)

// version is set with -ldflags at build time; it matches the engine's.
var version = "3.248.0"

// exitCodeAlreadyReported is the SDK's exit code after it has logged a
// user-actionable error itself (nodeJSProcessExitedAfterLoggingUserActionableMessage).
const exitCodeAlreadyReported = 32

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer
	engineAddress string
}

// engineAddressFromArgs returns the engine's address: the first positional
// argument. Flags the engine may pass (-tracing X, -root=X, ...) are skipped.
func engineAddressFromArgs(args []string) string {
	withValue := map[string]bool{"tracing": true, "root": true, "binary": true, "typescript": false}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") && withValue[name] {
				i++
			}
			continue
		}
		return a
	}
	return ""
}

func main() {
	h := &host{engineAddress: engineAddressFromArgs(os.Args[1:])}
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(srv, h)
			return nil
		},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-language-nodejs: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-language-nodejs: %v\n", err)
		os.Exit(1)
	}
}

func (h *host) Handshake(ctx context.Context, req *pulumirpc.LanguageHandshakeRequest) (*pulumirpc.LanguageHandshakeResponse, error) {
	if req.GetEngineAddress() != "" {
		h.engineAddress = req.GetEngineAddress()
	}
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *host) GetPluginInfo(ctx context.Context, _ *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

// packageJSON is the part of a package.json that declares a Pulumi plugin.
type packageJSON struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Pulumi  struct {
		Resource bool   `json:"resource"`
		Name     string `json:"name"`
		Version  string `json:"version"`
		Server   string `json:"server"`
	} `json:"pulumi"`
}

// pluginPackages lists the packages directly under node_modules (scoped ones
// included) whose package.json says they ship a resource plugin.
func pluginPackages(programDir string) ([]*pulumirpc.PackageDependency, error) {
	root := filepath.Join(programDir, "node_modules")
	var dirs []string
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "@") {
			scoped, err := os.ReadDir(filepath.Join(root, e.Name()))
			if err != nil {
				return nil, err
			}
			for _, s := range scoped {
				dirs = append(dirs, filepath.Join(root, e.Name(), s.Name()))
			}
		} else {
			dirs = append(dirs, filepath.Join(root, e.Name()))
		}
	}
	var deps []*pulumirpc.PackageDependency
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "package.json"))
		if err != nil {
			continue
		}
		var p packageJSON
		if json.Unmarshal(b, &p) != nil || !p.Pulumi.Resource {
			continue
		}
		name := p.Pulumi.Name
		if name == "" {
			name = strings.TrimPrefix(strings.TrimPrefix(p.Name, "@pulumi/"), "@")
		}
		v := p.Pulumi.Version
		if v == "" {
			v = p.Version
		}
		if v != "" && !strings.HasPrefix(v, "v") {
			v = "v" + v
		}
		deps = append(deps, &pulumirpc.PackageDependency{Kind: "resource", Name: name, Version: v, Server: p.Pulumi.Server})
	}
	return deps, nil
}

func (h *host) GetRequiredPackages(ctx context.Context, req *pulumirpc.GetRequiredPackagesRequest) (*pulumirpc.GetRequiredPackagesResponse, error) {
	deps, err := pluginPackages(req.GetInfo().GetProgramDirectory())
	if err != nil {
		return nil, err
	}
	return &pulumirpc.GetRequiredPackagesResponse{Packages: deps}, nil
}

func (h *host) GetRequiredPlugins(ctx context.Context, req *pulumirpc.GetRequiredPluginsRequest) (*pulumirpc.GetRequiredPluginsResponse, error) {
	dir := req.GetInfo().GetProgramDirectory()
	if dir == "" {
		dir = req.GetProgram()
	}
	deps, err := pluginPackages(dir)
	if err != nil {
		return nil, err
	}
	var plugins []*pulumirpc.PluginDependency
	for _, d := range deps {
		plugins = append(plugins, &pulumirpc.PluginDependency{Kind: d.Kind, Name: d.Name, Version: d.Version, Server: d.Server})
	}
	return &pulumirpc.GetRequiredPluginsResponse{Plugins: plugins}, nil
}

func (h *host) GetProgramDependencies(ctx context.Context, req *pulumirpc.GetProgramDependenciesRequest) (*pulumirpc.GetProgramDependenciesResponse, error) {
	return &pulumirpc.GetProgramDependenciesResponse{}, nil
}

func (h *host) About(ctx context.Context, req *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	out, _ := exec.Command("node", "--version").Output()
	return &pulumirpc.AboutResponse{Executable: "node", Version: strings.TrimSpace(string(out))}, nil
}

func (h *host) InstallDependencies(req *pulumirpc.InstallDependenciesRequest, srv pulumirpc.LanguageRuntime_InstallDependenciesServer) error {
	return errors.New("pulumi-language-nodejs (sglang-serve build): run `npm ci` in the project instead")
}

func optionString(opts *structpb.Struct, key string) (string, bool) {
	if opts == nil {
		return "", false
	}
	v, ok := opts.GetFields()[key]
	if !ok {
		return "", false
	}
	switch k := v.GetKind().(type) {
	case *structpb.Value_BoolValue:
		return strconv.FormatBool(k.BoolValue), true
	case *structpb.Value_StringValue:
		return k.StringValue, true
	default:
		return "", false
	}
}

// runArgs is the command line the SDK's cmd/run expects (see its usage()).
func (h *host) runArgs(runPath string, req *pulumirpc.RunRequest) []string {
	args := []string{runPath}
	add := func(k, v string) {
		if v != "" {
			args = append(args, "--"+k, v)
		}
	}
	add("monitor", req.GetMonitorAddress())
	add("engine", h.engineAddress)
	add("organization", req.GetOrganization())
	add("project", req.GetProject())
	add("stack", req.GetStack())
	add("pwd", req.GetPwd())
	add("root-directory", req.GetInfo().GetRootDirectory())
	if req.GetDryRun() {
		args = append(args, "--dry-run")
	}
	add("parallel", strconv.Itoa(int(req.GetParallel())))
	entry := req.GetInfo().GetEntryPoint()
	if entry == "" {
		entry = "."
	}
	args = append(args, entry)
	return append(args, req.GetArgs()...)
}

// configJSON is PULUMI_CONFIG for the program: the stack's config as a JSON
// object, "{}" for a stack with none yet (as the official host's
// constructConfig gives it). A nil map would marshal to "null", on which the
// SDK's config parser fails with a TypeError before the program can say what
// to set (issue 22: `pulumi stack init newbox`, then `pulumi preview`).
func configJSON(req *pulumirpc.RunRequest) ([]byte, error) {
	config := req.GetConfig()
	if config == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(config)
}

func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	programDir := req.GetInfo().GetProgramDirectory()
	if programDir == "" {
		programDir = req.GetPwd()
	}
	runPath := filepath.Join(programDir, "node_modules", "@pulumi", "pulumi", "cmd", "run")
	if _, err := os.Stat(runPath); err != nil {
		return &pulumirpc.RunResponse{Error: "It looks like the Pulumi SDK has not been installed. Have you run `npm ci`?"}, nil
	}
	config, err := configJSON(req)
	if err != nil {
		return nil, err
	}
	secretKeys := req.GetConfigSecretKeys()
	if secretKeys == nil {
		secretKeys = []string{}
	}
	secrets, err := json.Marshal(secretKeys)
	if err != nil {
		return nil, err
	}
	env := append(os.Environ(), "PULUMI_CONFIG="+string(config), "PULUMI_CONFIG_SECRET_KEYS="+string(secrets))
	typescript := "true"
	if v, ok := optionString(req.GetInfo().GetOptions(), "typescript"); ok {
		typescript = v
	}
	env = append(env, "PULUMI_NODEJS_TYPESCRIPT="+typescript)
	if v, ok := optionString(req.GetInfo().GetOptions(), "tsconfig"); ok && v != "" {
		env = append(env, "PULUMI_NODEJS_TSCONFIG_PATH="+v)
	}
	var nodeArgs []string
	if v, ok := optionString(req.GetInfo().GetOptions(), "nodeargs"); ok && v != "" {
		nodeArgs = strings.Fields(v)
	}

	cmd := exec.CommandContext(ctx, "node", append(nodeArgs, h.runArgs(runPath, req)...)...)
	cmd.Dir = req.GetPwd()
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	cmd.Env = env
	if err := cmd.Run(); err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			if exitErr.ExitCode() == exitCodeAlreadyReported {
				return &pulumirpc.RunResponse{Bail: true}, nil
			}
			return &pulumirpc.RunResponse{Error: fmt.Sprintf("Program exited with non-zero exit code: %d", exitErr.ExitCode())}, nil
		}
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("Problem executing program (could not run node): %v", err)}, nil
	}
	return &pulumirpc.RunResponse{}, nil
}
