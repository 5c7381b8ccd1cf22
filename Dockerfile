# Courier's image: the controller (/courier, the entrypoint) and the
# worker-side fence (/courier-fence, config/worker/fence.yaml). Build from
# the repository root:
#   docker build -t courier:dev .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY pkg/ pkg/
RUN CGO_ENABLED=0 go build -trimpath -o /courier ./cmd/courier && \
    CGO_ENABLED=0 go build -trimpath -o /courier-fence ./cmd/courier-fence

FROM gcr.io/distroless/static:nonroot
COPY --from=build /courier /courier
COPY --from=build /courier-fence /courier-fence
USER 65532:65532
ENTRYPOINT ["/courier"]
