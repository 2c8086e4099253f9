# The Splash Fabric images: splash, the static splash binary and nothing
# else, and worker, which adds what contained process tools need.
#
# The engine this builds on has no registry to pull base images from, so
# the binary is built outside (CGO_ENABLED=0, by scripts/build-image.sh into
# .build/image/) and copied into an empty image. Build with:
#
#     scripts/build-image.sh            # tags splash:dev and splash-worker:dev
#
# One image serves every role; the command picks it:
#
#     docker run splash:dev nats --cluster-name c --cluster-port 6222 ...
#     docker run splash:dev host --nats-url nats://nats-1:4222 ...
#     docker run splash:dev worker --tools echo,upper ...
FROM scratch AS splash

COPY .build/image/splash /splash

# A writable directory for the JetStream store and other state, owned by the
# unprivileged user below; scratch has no /tmp, so nothing may rely on it.
# It is not declared a VOLUME: a deployment mounts a named volume here when
# the data must outlive the container, and no anonymous volumes pile up.
COPY --chown=65532:65532 .build/image/data /data

# No /etc/passwd in scratch: a numeric id needs none.
USER 65532:65532

# Inside a container the loopback interface is unreachable from the other
# services, so the NATS node listens on all interfaces and stores its data
# in the volume-friendly directory. The host API stays on loopback unless
# the deployment sets SPLASH_API_ADDR, keeping its exposure a choice. These
# count as given flags, so they override the same settings in a --config
# file; set one empty (an empty variable counts as unset) to keep the file's.
ENV SPLASH_NATS_HOST=0.0.0.0 \
    SPLASH_NATS_STORE_DIR=/data/nats \
    SPLASH_DATA_DIR=/data

# NATS clients, cluster routes and monitoring; the host API; worker metrics.
EXPOSE 4222 6222 8222 8080 9464

# No shell or curl here: the binary checks itself. The default URL is the
# host API's /healthz; other roles point SPLASH_HEALTHCHECK_URL (or the
# compose healthcheck's --url) at their own endpoint.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["/splash", "healthcheck"]

ENTRYPOINT ["/splash"]
CMD ["--help"]

# The worker image: the same, over a root file system that runs contained
# Python tools: Bubblewrap, Debian's python3 and its standard library, the
# shared libraries they load, the Python SDK (as an installed module) and
# examples/python under /opt/splash. scripts/worker-rootfs.sh assembles it
# from the building machine's packages (docs/decisions/0106-worker-image.md).
#
# A sandbox needs user namespaces and a fresh /proc inside the container:
# docker-compose.yml's worker services run with the engine's seccomp and
# AppArmor profiles off and /proc unmasked (docs/process-tools.md, "In a
# container"); the worker itself stays uid 65532 without a capability.
FROM splash AS worker

COPY .build/image/rootfs/ /
# Where the compose Python tools record their effects for the end-to-end
# audit (a named volume takes this directory's owner when first mounted).
COPY --chown=65532:65532 .build/image/data /effects
