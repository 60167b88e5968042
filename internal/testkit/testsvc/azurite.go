package testsvc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
)

// Azurite's well-known development account: its name and (public,
// documented) shared key.
const (
	AzuriteAccount = "devstoreaccount1"
	AzuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// AzuriteServer is a running Azurite blob service on loopback, blobs in
// memory, with the development account devstoreaccount1.
type AzuriteServer struct {
	Host string // 127.0.0.1:port, the adls.endpoint of iceberg-go
	proc *process
}

// Azurite starts Azurite's blob service for this test (stopped at its
// end): the azurite-blob program of the npm package azurite, which
// `make test` installs and names in SLUICE_AZURITE. The test fails when
// SLUICE_AZURITE is not set.
func Azurite(t testing.TB) *AzuriteServer {
	t.Helper()
	a, err := startAzurite()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.proc.stop(5 * time.Second) })
	return a
}

var sharedAzurite struct {
	once sync.Once
	a    *AzuriteServer
	err  error
}

// SharedAzurite returns the test binary's one Azurite, started on first
// use and ended with the binary. Tests that share it keep apart by
// container names (see [UniqueName]).
func SharedAzurite(t testing.TB) *AzuriteServer {
	t.Helper()
	sharedAzurite.once.Do(func() { sharedAzurite.a, sharedAzurite.err = startAzurite() })
	if sharedAzurite.err != nil {
		t.Fatal(sharedAzurite.err)
	}
	return sharedAzurite.a
}

func startAzurite() (*AzuriteServer, error) {
	bin := os.Getenv("SLUICE_AZURITE")
	if bin == "" {
		return nil, fmt.Errorf("SLUICE_AZURITE is not set: run the tests with `make test` (or set it to " +
			".tmp/azurite-<version>/node_modules/.bin/azurite-blob after `make azurite`)")
	}
	p, addr, err := startOnFreePort(func(port int) (*process, error) {
		return startProcess("azurite", nil, bin, "--blobHost", "127.0.0.1", "--blobPort", itoa(port),
			"--inMemoryPersistence", "--silent", "--skipApiVersionCheck")
	}, waitingTCP(30*time.Second))
	if err != nil {
		return nil, err
	}
	return &AzuriteServer{Host: addr, proc: p}, nil
}

// Props are iceberg-go's storage properties for Azurite with the account's
// shared key (key: "" for the right one).
func (a *AzuriteServer) Props(key string) map[string]string {
	if key == "" {
		key = AzuriteKey
	}
	return map[string]string{
		"adls.endpoint": a.Host, "adls.protocol": "http",
		"adls.auth.shared-key.account.name": AzuriteAccount, "adls.auth.shared-key.account.key": key,
	}
}

// URL is the abfs:// URL of path in container, as iceberg-go reads it
// (container@account.host/path).
func (a *AzuriteServer) URL(container, path string) string {
	return "abfs://" + container + "@" + AzuriteAccount + ".dfs.core.windows.net/" + strings.TrimPrefix(path, "/")
}

// Logs is Azurite's output so far.
func (a *AzuriteServer) Logs() string { return a.proc.logs() }

func (a *AzuriteServer) client() (*azblob.Client, error) {
	cred, err := azblob.NewSharedKeyCredential(AzuriteAccount, AzuriteKey)
	if err != nil {
		return nil, err
	}
	return azblob.NewClientWithSharedKeyCredential("http://"+a.Host+"/"+AzuriteAccount+"/", cred, nil)
}

// CreateContainer creates a container (unless it exists).
func (a *AzuriteServer) CreateContainer(t testing.TB, name string) {
	t.Helper()
	c, err := a.client()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateContainer(context.Background(), name, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		t.Fatalf("azurite: create container %s: %v", name, err)
	}
}

// PutBlob writes a blob.
func (a *AzuriteServer) PutBlob(t testing.TB, container, name string, data []byte) {
	t.Helper()
	c, err := a.client()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UploadBuffer(context.Background(), container, name, data, nil); err != nil {
		t.Fatalf("azurite: put %s/%s: %v", container, name, describe(err))
	}
}

// describe is an Azure error's status and code, else the error.
func describe(err error) string {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return fmt.Sprintf("HTTP %d %s", re.StatusCode, re.ErrorCode)
	}
	return err.Error()
}
