# Builds the operator image: a static Go binary on a minimal, non-root base.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY config/ config/
COPY internal/ internal/
ARG VERSION=devel
# The repository the image is pushed to: an operator image from it is this
# operator's own, never a KubeVirt release's, whatever its tag.
ARG REPOSITORY=ghcr.io/virt-operator/virt-operator
RUN CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X github.com/virt-operator/virt-operator/internal/version.Version=${VERSION} -X github.com/virt-operator/virt-operator/internal/version.Repository=${REPOSITORY}" \
    -o /out/virt-operator ./cmd/virt-operator

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/virt-operator /usr/bin/virt-operator
USER 65532:65532
ENTRYPOINT ["/usr/bin/virt-operator"]
CMD ["run"]
