# Courier's controller image. Build from the repository root:
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
RUN CGO_ENABLED=0 go build -trimpath \
	-ldflags "-X github.com/courierdev/courier/pkg/version.version=${VERSION} -X github.com/courierdev/courier/pkg/version.revision=${REVISION}" \
	-o /courier ./cmd/courier

FROM gcr.io/distroless/static:nonroot
COPY --from=build /courier /courier
USER 65532:65532
ENTRYPOINT ["/courier"]
