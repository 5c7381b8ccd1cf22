# Courier's image: the controller (/courier, the entrypoint), the
# worker-side fence (/courier-fence, config/worker/fence.yaml) and the
# cluster-inventory API's reference credential plugin for ClusterProfile
# workers (/plugins/secretreader, docs/worker-clusters.md). Build from
# the repository root:
#   docker build -t courier:dev --build-arg VERSION=v0.1.0 --build-arg REVISION=$(git rev-parse HEAD) .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY pkg/ pkg/
# The version and revision `courier --version` and courier_build_info report.
ARG VERSION=v0.0.0-dev
ARG REVISION=unknown
ENV LDFLAGS="-X github.com/courierdev/courier/pkg/version.version=${VERSION} -X github.com/courierdev/courier/pkg/version.revision=${REVISION}"
RUN CGO_ENABLED=0 go build -trimpath -ldflags "${LDFLAGS}" -o /courier ./cmd/courier && \
    CGO_ENABLED=0 go build -trimpath -ldflags "${LDFLAGS}" -o /courier-fence ./cmd/courier-fence && \
    CGO_ENABLED=0 go build -trimpath -o /secretreader sigs.k8s.io/cluster-inventory-api/plugins/secretreader/cmd/plugin

FROM gcr.io/distroless/static:nonroot
COPY --from=build /courier /courier
COPY --from=build /courier-fence /courier-fence
COPY --from=build /secretreader /plugins/secretreader
USER 65532:65532
ENTRYPOINT ["/courier"]
