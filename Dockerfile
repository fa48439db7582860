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
RUN CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X github.com/virt-operator/virt-operator/internal/version.Version=${VERSION}" \
    -o /out/virt-operator ./cmd/virt-operator

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/virt-operator /usr/bin/virt-operator
USER 65532:65532
ENTRYPOINT ["/usr/bin/virt-operator"]
CMD ["run"]
