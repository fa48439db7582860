package admission

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/certs"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/workloads"
)

// Upstream's webhook paths (virt-operator-validator).
const (
	PathCreate = "/kubevirt-validate-create"
	PathUpdate = "/kubevirt-validate-update"
	PathDelete = "/kubevirt-validate-delete"
)

// DefaultPort is upstream's webhook port (the Service targets the named port webhooks).
const DefaultPort = 8444

// Server serves the KubeVirt CR's webhooks over TLS.
type Server struct {
	// Addr is the listen address, e.g. ":8444".
	Addr string
	// Namespace holds the serving certificate's Secret (the operator's namespace).
	Namespace string
	// Reader reads KubeVirt CRs and the certificate Secret (the manager's cache).
	Reader client.Reader
	// Workloads counts the user data for a delete (uncached, metadata only):
	// the objects of every CRD the operator manages (read from Reader).
	Workloads client.Reader
	// Env is the operator's environment, from which a spec is read as the
	// operator reads it (Validator.Env; nil is the process environment).
	Env deployid.Env
	Log logr.Logger

	validatorOnce sync.Once
	validator     *Validator

	// reviews holds a token per review being read or decided (maxReviews).
	reviewsOnce sync.Once
	reviews     chan struct{}

	mu     sync.Mutex
	cached struct {
		version string
		cert    *tls.Certificate
	}
}

// NeedLeaderElection is false: every replica serves, as the Service reaches any.
func (s *Server) NeedLeaderElection() bool { return false }

// Start serves until ctx ends (a manager.Runnable).
func (s *Server) Start(ctx context.Context) error {
	l, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("webhook server: %w", err)
	}
	return s.serve(ctx, l)
}

// serve serves on l until ctx ends.
func (s *Server) serve(ctx context.Context, l net.Listener) error {
	srv := s.httpServer()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	s.Log.Info("serving the KubeVirt webhooks", "addr", l.Addr().String())
	if err := srv.ServeTLS(l, "", ""); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// The webhook server's limits. The API server calls a webhook with a 10 s
// timeout and sends at most a few MB: a request still being read after that is
// not the API server's, and only holds a connection and a goroutine (slowloris).
// Idle connections are kept longer than the API server's client keeps them
// (90 s), so it is the one that closes them and never sends on a connection
// being closed.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 15 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 120 * time.Second
	maxHeaderBytes    = 64 << 10
)

// httpServer is the server Start runs: TLS 1.2 or later with the operator's
// certificate, bounded reads, and HTTP/1.1 only, as the metrics server: HTTP/2's
// rapid-reset and stream floods cost a server more than they cost a client,
// and an admission webhook gains nothing from it. The empty TLSNextProto map
// keeps net/http from configuring HTTP/2; NextProtos offers http/1.1 alone in
// the TLS handshake.
func (s *Server) httpServer() *http.Server {
	return &http.Server{
		Handler:           s.Handler(),
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: s.certificate, NextProtos: []string{"http/1.1"}},
		TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){},
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
}

// certificate is the serving certificate in kubevirt-operator-certs, parsed again
// only when the Secret changed.
func (s *Server) certificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	secret := &corev1.Secret{}
	if err := s.Reader.Get(hello.Context(), client.ObjectKey{Namespace: s.Namespace, Name: certs.SecretOperator}, secret); err != nil {
		return nil, fmt.Errorf("the webhook certificate %s/%s: %w", s.Namespace, certs.SecretOperator, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cached.cert != nil && s.cached.version == secret.ResourceVersion {
		return s.cached.cert, nil
	}
	cert, err := tls.X509KeyPair(secret.Data[certs.TLSCertKey], secret.Data[certs.TLSPrivateKeyKey])
	if err != nil {
		return nil, fmt.Errorf("the webhook certificate %s/%s: %w", s.Namespace, certs.SecretOperator, err)
	}
	s.cached.version, s.cached.cert = secret.ResourceVersion, &cert
	return &cert, nil
}

// Handler serves the three paths.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(PathCreate, s.review(s.create))
	mux.Handle(PathUpdate, s.review(s.update))
	mux.Handle(PathDelete, s.review(s.delete))
	return mux
}

type decideFunc func(ctx context.Context, req *admissionv1.AdmissionRequest) (Verdict, error)

// maxReviewBytes bounds an AdmissionReview: the API server sends the object
// and the old object, each at most its 3 MiB request limit, in JSON.
const maxReviewBytes = 8 << 20

// maxReviews is how many reviews are read and decided at once. A review holds
// its body and what it decodes, about three times the body: four take at most
// about 100 MiB of the pod's 256 MiB, where requests in any number would take
// it all. The API server sends one per KubeVirt create, update or delete, so
// a fifth waits only while others call the port too; it waits unread, until a
// review is done or its request ends (then 503).
const maxReviews = 4

// review decodes an AdmissionReview, decides and answers with the same UID. A
// request it cannot read is a 400, one over maxReviewBytes a 413; a decision
// that fails (the API is down) is a refusal saying so, as failurePolicy Fail
// would make it anyway.
func (s *Server) review(decide decideFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.reviewsOnce.Do(func() { s.reviews = make(chan struct{}, maxReviews) })
		select {
		case s.reviews <- struct{}{}:
			defer func() { <-s.reviews }()
		case <-r.Context().Done():
			http.Error(w, fmt.Sprintf("virt-operator is busy with %d other admission reviews", maxReviews), http.StatusServiceUnavailable)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBytes+1))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if len(body) > maxReviewBytes {
			http.Error(w, fmt.Sprintf("the AdmissionReview is over %d MiB, more than the API server sends", maxReviewBytes>>20), http.StatusRequestEntityTooLarge)
			return
		}
		in := &admissionv1.AdmissionReview{}
		if err := json.Unmarshal(body, in); err != nil || in.Request == nil {
			http.Error(w, fmt.Sprintf("not an AdmissionReview: %v", err), http.StatusBadRequest)
			return
		}
		verdict, err := decide(r.Context(), in.Request)
		if err != nil {
			verdict = refuse("virt-operator could not decide: %v", err)
		}
		resp := &admissionv1.AdmissionResponse{UID: in.Request.UID, Allowed: verdict.Allowed}
		if !verdict.Allowed {
			resp.Result = &metav1.Status{Status: metav1.StatusFailure, Message: verdict.Message, Reason: metav1.StatusReasonForbidden, Code: http.StatusForbidden}
			s.Log.Info("refused", "operation", in.Request.Operation, "name", in.Request.Name, "namespace", in.Request.Namespace, "why", verdict.Message)
		}
		out := admissionv1.AdmissionReview{TypeMeta: in.TypeMeta, Response: resp}
		if out.APIVersion == "" {
			out.APIVersion, out.Kind = "admission.k8s.io/v1", "AdmissionReview"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&out)
	})
}

func decodeKubeVirt(raw []byte) (*v1.KubeVirt, error) {
	kv := &v1.KubeVirt{}
	if err := json.Unmarshal(raw, kv); err != nil {
		return nil, fmt.Errorf("not a KubeVirt: %w", err)
	}
	return kv, nil
}

func (s *Server) create(ctx context.Context, req *admissionv1.AdmissionRequest) (Verdict, error) {
	kv, err := decodeKubeVirt(req.Object.Raw)
	if err != nil {
		return refuse("%v", err), nil
	}
	all := &v1.KubeVirtList{}
	if err := s.Reader.List(ctx, all); err != nil {
		return Verdict{}, err
	}
	return s.decider().Create(ctx, kv, all.Items), nil
}

func (s *Server) decider() *Validator {
	s.validatorOnce.Do(func() { s.validator = &Validator{Env: s.Env} })
	return s.validator
}

func (s *Server) update(ctx context.Context, req *admissionv1.AdmissionRequest) (Verdict, error) {
	kv, err := decodeKubeVirt(req.Object.Raw)
	if err != nil {
		return refuse("%v", err), nil
	}
	old, err := decodeKubeVirt(req.OldObject.Raw)
	if err != nil {
		return refuse("%v", err), nil
	}
	return s.decider().Update(ctx, old, kv), nil
}

func (s *Server) delete(ctx context.Context, req *admissionv1.AdmissionRequest) (Verdict, error) {
	kv, err := decodeKubeVirt(req.OldObject.Raw)
	if err != nil {
		return refuse("%v", err), nil
	}
	return Delete(kv, func() (workloads.Counts, error) { return workloads.CountManaged(ctx, s.Reader, s.Workloads) }), nil
}
