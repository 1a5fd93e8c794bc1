// pulumi-resource-pulumi-nodejs: the plugin the engine starts for dynamic
// resources (`pulumi-nodejs:dynamic:*`), in the program's directory, with the
// engine's address as its argument; it must print the port of a
// pulumirpc.ResourceProvider server on stdout.
//
// For sglang-serve (a project with .build/providers/host/main.js, written by
// scripts/build-program.js) it hands the engine to a warm provider host: one
// Node.js process per user, project directory and build that keeps the
// modules loaded and the SSH connections open across engine runs. It connects
// to the host's unix socket (starting the host if none answers), asks for a
// server of its own, prints that port, and relays the host's output for this
// connection to stdout/stderr until the engine stops it. The engine kills this
// process when it is done; the host then drops the connection's server.
//
//	SGLANG_SERVE_PROVIDER_HOST=process   a provider process per engine run instead
//
// Any other project gets @pulumi/pulumi's own dynamic provider, as the
// launcher in Pulumi's distribution does.
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const hostScript = ".build/providers/host/main.js"

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pulumi-resource-pulumi-nodejs: "+format+"\n", args...)
	os.Exit(1)
}

// projectRoot is the nearest directory at or above the working directory with a Pulumi.yaml.
func projectRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		fatalf("%v", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "Pulumi.yaml")); err == nil {
			return dir
		}
		if filepath.Dir(dir) == dir {
			return wd
		}
	}
}

func execNode(script string, args []string) {
	node, err := exec.LookPath("node")
	if err != nil {
		fatalf("node not found on PATH")
	}
	err = syscall.Exec(node, append([]string{"node", script}, args...), os.Environ())
	fatalf("exec %s: %v", node, err)
}

// sdkDynamicProvider is @pulumi/pulumi's dynamic-provider entry point as seen from the working directory.
func sdkDynamicProvider() string {
	out, err := exec.Command("node", "-e", "process.stdout.write(require.resolve('@pulumi/pulumi/cmd/dynamic-provider'))").Output()
	if err != nil {
		fatalf("cannot find @pulumi/pulumi/cmd/dynamic-provider from %s: %v", mustGetwd(), err)
	}
	return string(out)
}

func mustGetwd() string {
	wd, _ := os.Getwd()
	return wd
}

// runtimeDir is a directory only this user can enter: $XDG_RUNTIME_DIR/sglang-serve or /tmp/sglang-serve-<uid>.
func runtimeDir() (string, error) {
	uid := os.Getuid()
	dir := fmt.Sprintf("/tmp/sglang-serve-%d", uid)
	if base := os.Getenv("XDG_RUNTIME_DIR"); base != "" {
		dir = filepath.Join(base, "sglang-serve")
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != uid || fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s is not a directory private to uid %d (mode %v)", dir, uid, fi.Mode())
	}
	return dir, nil
}

// hostEnv is the environment the long-lived host gets: what Node.js and the
// providers need, nothing of the engine run that started it (passphrases,
// tokens, secrets in SGLANG_SERVE_* variables of a CI step).
func hostEnv() []string {
	keep := map[string]bool{
		"PATH": true, "HOME": true, "USER": true, "LANG": true, "TZ": true, "TMPDIR": true, "NODE_OPTIONS": true,
		"SGLANG_SERVE_ROOT": true, "SGLANG_SERVE_PROVIDER_HOST_IDLE_SECONDS": true,
		"SGLANG_BENCH_PROFILE_LOG": true, // npm run bench's profile of the host
	}
	var env []string
	for _, kv := range os.Environ() {
		name := kv[:strings.IndexByte(kv, '=')]
		if keep[name] || strings.HasPrefix(name, "LC_") || strings.HasPrefix(name, "XDG_") {
			env = append(env, kv)
		}
	}
	return env
}

// connectHost returns a connection to the project's warm provider host, starting one if none answers.
func connectHost(root, script string) (net.Conn, error) {
	buildID, err := os.ReadFile(filepath.Join(root, ".build", "build-id"))
	if err != nil {
		return nil, err
	}
	dir, err := runtimeDir()
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(root + "\x00" + strings.TrimSpace(string(buildID))))
	base := filepath.Join(dir, hex.EncodeToString(sum[:])[:16])
	sock := base + ".sock"
	if c, err := net.Dial("unix", sock); err == nil {
		return c, nil
	}
	// One launcher starts the host; the others wait on the lock and then find it.
	lock, err := os.OpenFile(base+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck
	if c, err := net.Dial("unix", sock); err == nil {
		return c, nil
	}
	_ = os.Remove(sock) // a host that died without cleaning up
	logPath := base + ".log"
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(node, script, "--daemon", sock)
	cmd.Dir = root
	cmd.Env = hostEnv()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own session: not in this plugin's process group, which the engine kills.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("unix", sock); err == nil {
			return c, nil
		}
		select {
		case err := <-exited:
			tail, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("the provider host exited (%v): %s", err, strings.TrimSpace(lastLines(string(tail), 10)))
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("the provider host did not answer on %s within 20 s (log: %s)", sock, logPath)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

type hostMessage struct {
	Port  int     `json:"port"`
	Error string  `json:"error"`
	Out   *string `json:"out"`
	Err   *string `json:"err"`
}

func main() {
	args := os.Args[1:]
	if len(args) == 0 {
		fatalf("missing <engine> address")
	}
	root := projectRoot()
	script := filepath.Join(root, hostScript)
	if _, err := os.Stat(script); err != nil {
		execNode(sdkDynamicProvider(), args)
	}
	switch mode := os.Getenv("SGLANG_SERVE_PROVIDER_HOST"); mode {
	case "process":
		execNode(script, args)
	case "", "warm":
	default:
		fatalf("SGLANG_SERVE_PROVIDER_HOST=%q: use warm (the default) or process", mode)
	}
	conn, err := connectHost(root, script)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sglang-serve: no warm provider host (%v); starting a provider process for this run\n", err)
		execNode(script, args)
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-signals
		conn.Close()
		os.Exit(0)
	}()
	open, _ := json.Marshal(map[string]string{"op": "open", "engine": args[0]})
	if _, err := conn.Write(append(open, '\n')); err != nil {
		fatalf("provider host: %v", err)
	}
	reader := bufio.NewReader(conn)
	started := false
	for {
		line, err := reader.ReadBytes('\n')
		if err != nil {
			if started {
				fatalf("the provider host closed this connection (%v)", err)
			}
			fatalf("the provider host did not open a server (%v)", err)
		}
		var msg hostMessage
		if err := json.Unmarshal(line, &msg); err != nil {
			fatalf("provider host: unreadable message %q", strings.TrimSpace(string(line)))
		}
		switch {
		case msg.Error != "":
			fatalf("provider host: %s", msg.Error)
		case msg.Out != nil:
			fmt.Fprintln(os.Stdout, *msg.Out)
		case msg.Err != nil:
			fmt.Fprintln(os.Stderr, *msg.Err)
		case msg.Port > 0 && !started:
			started = true
			fmt.Fprintln(os.Stdout, msg.Port)
		}
	}
}
