// Command gpu-device-plugin stands in for HAMi's NVIDIA device plugin on a node without a GPU.
// It speaks the kubelet's device-plugin API (v1beta1, gRPC over a unix socket) for the resource
// nvidia.com/gpu: each card offers as many devices as it may be split into, as HAMi's plugin
// advertises them, so pods that ask for a share of a card are admitted and started by a real
// kubelet. No card is attached: a container given devices sees their cards' UUIDs in
// NVIDIA_VISIBLE_DEVICES, as under HAMi, and GPU_STANDIN saying that no GPU is there.
//
// Usage: gpu-device-plugin -cards GPU-a:8,GPU-b:8 [-dir /var/lib/kubelet/device-plugins]
//
// It registers again whenever the kubelet's socket is made anew (a kubelet restart removes
// every plugin socket) and exits on SIGTERM or SIGINT.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	api "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

const (
	resource   = "nvidia.com/gpu"
	socketName = "gshare-gpu-standin.sock"
	standinMsg = "no GPU on this node: the device plugin is a stand-in that only counts shares"
)

type plugin struct {
	api.UnimplementedDevicePluginServer
	devices []*api.Device
}

// parseCards reads "UUID:splits,UUID:splits" into one device per share, named UUID::n.
func parseCards(spec string) ([]*api.Device, error) {
	var devices []*api.Device
	for _, part := range strings.Split(spec, ",") {
		uuid, count, ok := strings.Cut(strings.TrimSpace(part), ":")
		n, err := strconv.Atoi(count)
		if !ok || uuid == "" || err != nil || n < 1 || n > 64 {
			return nil, fmt.Errorf("card %q: want UUID:splits with 1 to 64 splits", part)
		}
		for i := 0; i < n; i++ {
			devices = append(devices, &api.Device{ID: fmt.Sprintf("%s::%d", uuid, i), Health: api.Healthy})
		}
	}
	return devices, nil
}

func (p *plugin) GetDevicePluginOptions(context.Context, *api.Empty) (*api.DevicePluginOptions, error) {
	return &api.DevicePluginOptions{}, nil
}

// ListAndWatch sends the devices once; they never change while the plugin runs.
func (p *plugin) ListAndWatch(_ *api.Empty, stream grpc.ServerStreamingServer[api.ListAndWatchResponse]) error {
	if err := stream.Send(&api.ListAndWatchResponse{Devices: p.devices}); err != nil {
		return err
	}
	<-stream.Context().Done()
	return nil
}

func (p *plugin) Allocate(_ context.Context, req *api.AllocateRequest) (*api.AllocateResponse, error) {
	out := &api.AllocateResponse{}
	for _, container := range req.ContainerRequests {
		cards := map[string]bool{}
		for _, id := range container.DevicesIds {
			uuid, _, _ := strings.Cut(id, "::")
			cards[uuid] = true
		}
		uuids := make([]string, 0, len(cards))
		for uuid := range cards {
			uuids = append(uuids, uuid)
		}
		sort.Strings(uuids)
		out.ContainerResponses = append(out.ContainerResponses, &api.ContainerAllocateResponse{
			Envs: map[string]string{
				"NVIDIA_VISIBLE_DEVICES": strings.Join(uuids, ","),
				"GPU_STANDIN":            standinMsg,
			},
		})
	}
	return out, nil
}

func (p *plugin) PreStartContainer(context.Context, *api.PreStartContainerRequest) (*api.PreStartContainerResponse, error) {
	return &api.PreStartContainerResponse{}, nil
}

// serve listens on our socket in dir, removing a stale one first.
func (p *plugin) serve(dir string) (*grpc.Server, error) {
	path := filepath.Join(dir, socketName)
	_ = os.Remove(path)
	listener, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	server := grpc.NewServer()
	api.RegisterDevicePluginServer(server, p)
	go func() { _ = server.Serve(listener) }()
	return server, nil
}

func register(dir string) error {
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, "kubelet.sock"),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = api.NewRegistrationClient(conn).Register(ctx, &api.RegisterRequest{
		Version: api.Version, Endpoint: socketName, ResourceName: resource,
	})
	return err
}

// inode of a path, 0 when it is missing.
func inode(path string) uint64 {
	var st syscall.Stat_t
	if syscall.Stat(path, &st) != nil {
		return 0
	}
	return st.Ino
}

func main() {
	cards := flag.String("cards", "", "the cards, as UUID:splits,UUID:splits")
	dir := flag.String("dir", api.DevicePluginPath, "the kubelet's device-plugin folder")
	flag.Parse()
	devices, err := parseCards(*cards)
	if err != nil {
		log.Fatal(err)
	}
	p := &plugin{devices: devices}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	var server *grpc.Server
	var registeredWith uint64
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		kubelet := inode(filepath.Join(*dir, "kubelet.sock"))
		if kubelet != 0 && (kubelet != registeredWith || inode(filepath.Join(*dir, socketName)) == 0) {
			if server != nil {
				server.Stop()
			}
			if server, err = p.serve(*dir); err != nil {
				log.Printf("cannot listen: %v", err)
			} else if err = register(*dir); err != nil {
				log.Printf("cannot register with the kubelet: %v", err)
			} else {
				registeredWith = kubelet
				log.Printf("registered %d devices of %s", len(devices), resource)
			}
		}
		select {
		case <-stop:
			if server != nil {
				server.Stop()
			}
			_ = os.Remove(filepath.Join(*dir, socketName))
			return
		case <-tick.C:
		}
	}
}
