#!/usr/bin/python3
"""Checks the deployment assets in deploy/ with what this machine has: PyYAML and sh.

    check_assets.py REPO_ROOT OUT.json

Parses every YAML asset, checks that the pieces which must agree do (names, counts, ports,
the secret, the shared volume, restart policies, job files), runs the Kubernetes Jobs' and the
daemons' StatefulSet's shell snippets with a fake `ringtrain` for every index, and writes to OUT.json
    {"errors": [...], "tf_configs": [{"source", "text", "index", "workers", "environment"}],
     "job_files": [{"source", "path", "recovery"}]}
for deploy_test, which parses every TF_CONFIG and job file with ringtrain's own parsers.
Exit 0 when it could check (errors are in the file), 77 when PyYAML is missing.
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:
    print("PyYAML is not installed for " + sys.executable + " (apt-get install python3-yaml)")
    sys.exit(77)

SECRET_ENV = "RINGTRAIN_CLUSTER_SECRET_FILE"
IMAGE_JOBS = "/opt/ringtrain/jobs/"  # where the Dockerfile copies deploy/jobs/
SHARED = "/var/lib/ringtrain"        # where cluster_demo*.json write, a shared volume

root = sys.argv[1]
errors = []
tf_configs = []
job_files = []


def err(source, message):
    errors.append(source + ": " + message)


def load_all(rel):
    with open(os.path.join(root, rel)) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def env_of(container):
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def check_job_file(source, image_path, recovery):
    """The job file a container runs: in the image, from deploy/jobs/, with this recovery."""
    if not image_path or not image_path.startswith(IMAGE_JOBS):
        return err(source, "job file %r is not one of the image's %s" % (image_path, IMAGE_JOBS))
    rel = "deploy/jobs/" + image_path[len(IMAGE_JOBS):]
    try:
        with open(os.path.join(root, rel)) as f:
            job = json.load(f)
    except (OSError, ValueError) as e:
        return err(source, "job file %s: %s" % (rel, e))
    if job.get("recovery", "in_place") != recovery:
        err(source, "%s has recovery %r, the restart policy fits %r" % (rel, job.get("recovery"), recovery))
    if not job.get("backup_and_restore", {}).get("backup_dir", "").startswith(SHARED):
        err(source, "%s's backup_dir is not on the shared volume %s" % (rel, SHARED))
    job_files.append({"source": source, "path": rel, "recovery": recovery})


def check_pod_secret_and_volume(source, pod, container, claim):
    """The secret file comes from a mounted Secret; the shared volume is the PVC at SHARED
    (claim None: the pod has no shared volume to check)."""
    env = env_of(container)
    secret_path = env.get(SECRET_ENV) or ""
    mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    secret_volume = volumes.get(mounts.get(os.path.dirname(secret_path), ""), {})
    if "secret" not in secret_volume:
        err(source, "%s=%r is not in a mounted Secret" % (SECRET_ENV, secret_path))
    elif secret_volume["secret"].get("defaultMode", 0o644) & 0o040 == 0:
        err(source, "the Secret's files are not readable by fsGroup (defaultMode)")
    shared = volumes.get(mounts.get(SHARED, ""), {})
    if claim is not None and shared.get("persistentVolumeClaim", {}).get("claimName") != claim:
        err(source, "%s is not the PersistentVolumeClaim %r" % (SHARED, claim))
    if env.get("RINGTRAIN_BIND_ALL") != "1":
        err(source, "RINGTRAIN_BIND_ALL=1 is missing (the pod's own DNS name may not resolve at start)")
    data_host = [e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") for e in container.get("env", [])
                 if e["name"] == "RINGTRAIN_DATA_HOST"]
    if data_host != ["status.podIP"]:
        err(source, "RINGTRAIN_DATA_HOST is not the pod's address (fieldRef status.podIP)")
    if pod.get("securityContext", {}).get("fsGroup") is None:
        err(source, "no fsGroup: the image's user cannot write the shared volume")


def run_snippet(source, job, container, fake_bin, out_path):
    """Runs the container's `sh -c` snippet for every completion index with a fake ringtrain."""
    command = container.get("command", []) + container.get("args", [])
    if command[:2] != ["/bin/sh", "-c"] or len(command) != 3:
        return err(source, "the container command is not /bin/sh -c SCRIPT")
    env = env_of(container)
    count = job["spec"]["completions"]
    for index in range(count):
        run_env = {k: v for k, v in env.items() if v is not None}
        run_env.update(PATH=fake_bin + ":/usr/bin:/bin", JOB_COMPLETION_INDEX=str(index), FAKE_OUT=out_path)
        r = subprocess.run(["/bin/sh", "-c", command[2]], env=run_env, capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            return err(source, "the snippet failed for index %d (exit %d): %s" % (index, r.returncode, r.stderr))
        with open(out_path) as f:
            tf_config, args = f.read().split("\n", 1)
        expected = ["%s-%d.%s:%s" % (job["metadata"]["name"], i, env.get("SERVICE"), env.get("PORT"))
                    for i in range(count)]
        tf_configs.append({"source": "%s index %d" % (source, index), "text": tf_config, "index": index,
                           "workers": expected, "environment": ""})
        if shlex.split(args) != ["worker", "--job", env.get("JOB_FILE")]:
            err(source, "the snippet runs ringtrain %s" % args.strip())


def check_k8s(fake_bin, out_path):
    svc_docs = load_all("deploy/k8s/service.yaml")
    by_kind = {d["kind"]: d for d in svc_docs}
    service, pvc = by_kind.get("Service"), by_kind.get("PersistentVolumeClaim")
    if not service or not pvc:
        return err("deploy/k8s/service.yaml", "needs a Service and a PersistentVolumeClaim, has %s" %
                   [d["kind"] for d in svc_docs])
    src = "deploy/k8s/service.yaml"
    if service["spec"].get("clusterIP") != "None":
        err(src, "the Service is not headless (clusterIP: None)")
    if service["spec"].get("publishNotReadyAddresses") is not True:
        err(src, "publishNotReadyAddresses is not true: workers could not find each other while starting")
    if "ReadWriteMany" not in pvc["spec"].get("accessModes", []):
        err(src, "the shared volume is not ReadWriteMany")
    selector = service["spec"].get("selector", {})
    service_ports = {p["port"] for p in service["spec"].get("ports", [])}
    for rel, restart_policy, recovery in (("deploy/k8s/job-in-place.yaml", "OnFailure", "in_place"),
                                          ("deploy/k8s/job-restart.yaml", "Never", "restart")):
        docs = load_all(rel)
        if [d.get("kind") for d in docs] != ["Job"] or docs[0].get("apiVersion") != "batch/v1":
            err(rel, "is not one batch/v1 Job")
            continue
        job = docs[0]
        spec, pod = job["spec"], job["spec"]["template"]["spec"]
        labels = job["spec"]["template"].get("metadata", {}).get("labels", {})
        containers = pod.get("containers", [])
        env = env_of(containers[0]) if containers else {}
        if spec.get("completionMode") != "Indexed":
            err(rel, "completionMode is not Indexed")
        if not (spec.get("completions") == spec.get("parallelism") == int(env.get("WORKERS", -1))):
            err(rel, "completions %s, parallelism %s and WORKERS %s differ" %
                (spec.get("completions"), spec.get("parallelism"), env.get("WORKERS")))
        if any(labels.get(k) != v for k, v in selector.items()):
            err(rel, "the pods' labels %s do not match the Service's selector %s" % (labels, selector))
        if not (pod.get("subdomain") == env.get("SERVICE") == service["metadata"]["name"]):
            err(rel, "subdomain %s, SERVICE %s and the Service's name %s differ" %
                (pod.get("subdomain"), env.get("SERVICE"), service["metadata"]["name"]))
        if env.get("JOB_NAME") != job["metadata"]["name"]:
            err(rel, "JOB_NAME %s is not the Job's name %s" % (env.get("JOB_NAME"), job["metadata"]["name"]))
        ports = {p["containerPort"] for p in containers[0].get("ports", [])} if containers else set()
        if env.get("PORT") is None or int(env["PORT"]) not in ports & service_ports:
            err(rel, "PORT %s is not both a containerPort %s and a Service port %s" % (env.get("PORT"), ports,
                                                                                       service_ports))
        check_preempt_grace(rel, pod.get("terminationGracePeriodSeconds"), env)
        if pod.get("restartPolicy") != restart_policy:
            err(rel, "restartPolicy is %s, recovery %s needs %s" % (pod.get("restartPolicy"), recovery, restart_policy))
        if restart_policy == "OnFailure" and not spec.get("backoffLimit"):
            err(rel, "no backoffLimit bounds the restarts")
        if restart_policy == "Never":
            if not spec.get("backoffLimitPerIndex"):
                err(rel, "no backoffLimitPerIndex bounds the restarts")
            codes = {c for r in spec.get("podFailurePolicy", {}).get("rules", []) if r.get("action") == "FailJob"
                     for c in r.get("onExitCodes", {}).get("values", [])}
            if codes != {2, 3, 6}:
                err(rel, "podFailurePolicy fails the Job on exit codes %s, not on 2, 3 and 6" % sorted(codes))
            ignored = {c for r in spec.get("podFailurePolicy", {}).get("rules", []) if r.get("action") == "Ignore"
                       for c in r.get("onExitCodes", {}).get("values", [])}
            if 7 not in ignored:
                err(rel, "podFailurePolicy counts exit 7 (preempted after a backup) as a failure; Ignore it")
        if containers:
            check_pod_secret_and_volume(rel, pod, containers[0], pvc["metadata"]["name"])
            check_job_file(rel, env.get("JOB_FILE"), recovery)
            run_snippet(rel, job, containers[0], fake_bin, out_path)


# The workers' own limit after SIGTERM (RINGTRAIN_PREEMPT_GRACE_S, default 25 s) must end
# before the scheduler's SIGKILL, with room for the process to exit.
PREEMPT_MARGIN_S = 3


def check_preempt_grace(source, scheduler_grace_s, env):
    grace = float(env.get("RINGTRAIN_PREEMPT_GRACE_S", 25))
    if scheduler_grace_s is None or scheduler_grace_s < grace + PREEMPT_MARGIN_S:
        err(source, "the SIGKILL grace %s s does not leave RINGTRAIN_PREEMPT_GRACE_S=%g s and %d s to save and exit"
            % (scheduler_grace_s, grace, PREEMPT_MARGIN_S))


def check_tfjob():
    rel = "deploy/k8s/tfjob.yaml"
    docs = load_all(rel)
    if [d.get("kind") for d in docs] != ["TFJob"] or docs[0].get("apiVersion") != "kubeflow.org/v1":
        return err(rel, "is not one kubeflow.org/v1 TFJob")
    job = docs[0]
    specs = job["spec"].get("tfReplicaSpecs", {})
    if set(specs) != {"Worker"}:
        return err(rel, "tfReplicaSpecs has %s; ringtrain trains with Worker replicas only" % sorted(specs))
    worker = specs["Worker"]
    replicas = worker.get("replicas")
    if not isinstance(replicas, int) or replicas < 1:
        err(rel, "Worker replicas %r is not a positive integer" % replicas)
    if worker.get("restartPolicy") not in ("OnFailure", "Always", "Never", "ExitCode"):
        err(rel, "restartPolicy %r is not one the operator knows" % worker.get("restartPolicy"))
    if worker.get("restartPolicy") != "OnFailure":
        err(rel, "restartPolicy is not OnFailure (ExitCode treats ringtrain's exit 5 as permanent)")
    check_preempt_grace(rel, worker["template"]["spec"].get("terminationGracePeriodSeconds"),
                        {e["name"]: e.get("value") for c in worker["template"]["spec"].get("containers", [])
                         for e in c.get("env", []) if "value" in e})
    if not job["spec"].get("runPolicy", {}).get("backoffLimit"):
        err(rel, "no runPolicy.backoffLimit bounds the restarts")
    pod = worker["template"]["spec"]
    containers = {c["name"]: c for c in pod.get("containers", [])}
    container = containers.get("tensorflow")
    if container is None:
        return err(rel, "no container named tensorflow: the operator would not set its TF_CONFIG")
    ports = {p.get("name"): p.get("containerPort") for p in container.get("ports", [])}
    port = ports.get("tfjob-port")
    if port is None:
        err(rel, "no port named tfjob-port: the operator would use 2222 without opening it")
    command = container.get("command", []) + container.get("args", [])
    job_arg = command[command.index("--job") + 1] if "--job" in command else None
    if command[:2] != ["ringtrain", "worker"]:
        err(rel, "the container does not run ringtrain worker: %s" % command)
    check_pod_secret_and_volume(rel, pod, container, "ringtrain-shared")
    check_job_file(rel, job_arg, "in_place")
    # TF_CONFIG as the operator writes it: the replicas' Service names, in namespace ns.
    name, ns = job["metadata"]["name"], job["metadata"].get("namespace", "default")
    workers = ["%s-worker-%d.%s.svc:%d" % (name, i, ns, port or 2222) for i in range(replicas or 0)]
    for i in range(replicas or 0):
        text = json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": i},
                           "environment": "cloud"})
        tf_configs.append({"source": "%s worker %d" % (rel, i), "text": text, "index": i, "workers": workers,
                           "environment": "cloud"})


def check_serve(fake_bin, out_path):
    """deploy/k8s/serve-statefulset.yaml: the daemons (`ringtrain serve`) as a StatefulSet."""
    rel = "deploy/k8s/serve-statefulset.yaml"
    docs = load_all(rel)
    if [d.get("kind") for d in docs] != ["Service", "StatefulSet"]:
        return err(rel, "is not a Service and a StatefulSet: %s" % [d.get("kind") for d in docs])
    service, sts = docs
    if sts.get("apiVersion") != "apps/v1":
        err(rel, "the StatefulSet is not apps/v1")
    if service["spec"].get("clusterIP") != "None":
        err(rel, "the Service is not headless (clusterIP: None)")
    if service["spec"].get("publishNotReadyAddresses") is not True:
        err(rel, "publishNotReadyAddresses is not true: the daemons could not find each other while starting")
    spec, pod = sts["spec"], sts["spec"]["template"]["spec"]
    labels = sts["spec"]["template"].get("metadata", {}).get("labels", {})
    selector = service["spec"].get("selector", {})
    if not selector or any(labels.get(k) != v for k, v in selector.items()):
        err(rel, "the pods' labels %s do not match the Service's selector %s" % (labels, selector))
    if any(labels.get(k) != v for k, v in spec.get("selector", {}).get("matchLabels", {}).items()):
        err(rel, "the pods' labels %s do not match the StatefulSet's selector" % labels)
    containers = pod.get("containers", [])
    if len(containers) != 1:
        return err(rel, "the pod has %d containers, not 1" % len(containers))
    container = containers[0]
    env = env_of(container)
    name = sts["metadata"]["name"]
    if not (spec.get("serviceName") == env.get("SERVICE") == service["metadata"]["name"]):
        err(rel, "serviceName %s, SERVICE %s and the Service's name %s differ" %
            (spec.get("serviceName"), env.get("SERVICE"), service["metadata"]["name"]))
    if env.get("STATEFULSET") != name:
        err(rel, "STATEFULSET %s is not the StatefulSet's name %s" % (env.get("STATEFULSET"), name))
    replicas = spec.get("replicas")
    if not isinstance(replicas, int) or replicas < 1 or replicas != int(env.get("DAEMONS", -1)):
        err(rel, "replicas %s and DAEMONS %s differ" % (replicas, env.get("DAEMONS")))
        return
    if spec.get("podManagementPolicy") != "Parallel":
        err(rel, "podManagementPolicy is not Parallel: pod 1 would wait for pod 0 to be Ready")
    ports = {p["containerPort"] for p in container.get("ports", [])}
    service_ports = {p["port"] for p in service["spec"].get("ports", [])}
    port = int(env.get("PORT", -1))
    if port not in ports & service_ports:
        err(rel, "PORT %s is not both a containerPort %s and a Service port %s" % (port, ports, service_ports))
    # A job's tasks listen on PORT + stride * (1 + id mod span), stride = the TF_CONFIG's tasks.
    span = int(env.get("RINGTRAIN_JOB_PORT_SPAN", 16))
    job_ports = {port + replicas * (1 + k) for k in range(span)}
    if not job_ports <= ports:
        err(rel, "the jobs' ports %s are not containerPorts" % sorted(job_ports - ports))
    check_preempt_grace(rel, pod.get("terminationGracePeriodSeconds"), env)
    check_pod_secret_and_volume(rel, pod, container, None)
    # The work directory is each pod's own volume: the queue and the jobs' backups survive the pod.
    work_dir = env.get("WORK_DIR")
    mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
    claims = {t["metadata"]["name"] for t in spec.get("volumeClaimTemplates", [])}
    if mounts.get(work_dir) not in claims:
        err(rel, "WORK_DIR %s is not a volumeClaimTemplate's mount (%s)" % (work_dir, sorted(claims)))
    # The snippet, for every ordinal, with a fake ringtrain.
    command = container.get("command", []) + container.get("args", [])
    if command[:2] != ["/bin/sh", "-c"] or len(command) != 3:
        return err(rel, "the container command is not /bin/sh -c SCRIPT")
    namespace = "ns1"
    workers = ["%s-%d.%s.%s.svc:%d" % (name, i, env.get("SERVICE"), namespace, port) for i in range(replicas)]
    for index in range(replicas):
        run_env = {k: v for k, v in env.items() if v is not None}
        run_env.update(PATH=fake_bin + ":/usr/bin:/bin", FAKE_OUT=out_path, POD_NAME="%s-%d" % (name, index),
                       NAMESPACE=namespace, TF_CONFIG_FILE=out_path + ".client")
        r = subprocess.run(["/bin/sh", "-c", command[2]], env=run_env, capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            return err(rel, "the snippet failed for ordinal %d (exit %d): %s" % (index, r.returncode, r.stderr))
        with open(out_path) as f:
            tf_config, args = f.read().split("\n", 1)
        with open(out_path + ".client") as f:
            if f.read().strip() != tf_config:
                err(rel, "the clients' TF_CONFIG file is not the daemon's TF_CONFIG")
        tf_configs.append({"source": "%s ordinal %d" % (rel, index), "text": tf_config, "index": index,
                           "workers": workers, "environment": ""})
        if shlex.split(args) != ["serve", "--work_dir", work_dir]:
            err(rel, "the snippet runs ringtrain %s" % args.strip())


def check_compose():
    rel = "deploy/docker/compose.yaml"
    compose = load_all(rel)[0]
    services = compose.get("services", {})
    secrets, volumes = compose.get("secrets", {}), compose.get("volumes", {})
    if len(services) != 2:
        err(rel, "the demo has %d services, not 2" % len(services))
    names = sorted(services)
    shared_volumes = set()
    for name in names:
        s, src = services[name], "%s service %s" % (rel, name)
        if not str(s.get("restart", "")).startswith("on-failure"):
            err(src, "restart is %r, not on-failure" % s.get("restart"))
        env = s.get("environment", {})
        secret_names = [x if isinstance(x, str) else x.get("source") for x in s.get("secrets", [])]
        if not any(env.get(SECRET_ENV) == "/run/secrets/" + x and "file" in secrets.get(x, {}) for x in secret_names):
            err(src, "%s does not name one of its file secrets under /run/secrets" % SECRET_ENV)
        for v in s.get("volumes", []):
            volume, _, target = v.partition(":")
            if target == SHARED and volume in volumes:
                shared_volumes.add(volume)
        build = s.get("build", {})
        if not os.path.isfile(os.path.join(root, "deploy/docker", build.get("context", "."),
                                           build.get("dockerfile", "Dockerfile"))):
            err(src, "build's dockerfile %r is not in its context" % build.get("dockerfile"))
        command = s.get("command", [])
        check_job_file(src, command[command.index("--job") + 1] if "--job" in command else None, "in_place")
        text = env.get("TF_CONFIG")
        if text is None:
            err(src, "no TF_CONFIG")
            continue
        index = json.loads(text).get("task", {}).get("index")
        tf_configs.append({"source": src, "text": text, "index": index,
                           "workers": ["%s:2222" % n for n in names], "environment": ""})
    if len(shared_volumes) != 1:
        err(rel, "the services do not share one named volume at %s (%s)" % (SHARED, sorted(shared_volumes)))


def package_list(text, pattern):
    m = re.search(pattern, text, re.S)
    return sorted(m.group(1).replace("\\", " ").split()) if m else None


def check_dockerfile():
    rel = "deploy/docker/Dockerfile"
    with open(os.path.join(root, rel)) as f:
        dockerfile = f.read()
    with open(os.path.join(root, "deploy/ringtrain.sh")) as f:
        script = f.read()
    wanted = package_list(script, r"PACKAGES=\(([^)]*)\)")
    # The build stage: the first `apt-get install ... --no-install-recommends` up to `&&`.
    got = package_list(dockerfile, r"apt-get install -y --no-install-recommends([^&]*)&&")
    if wanted is None or got is None or wanted != got:
        err(rel, "the build stage's packages %s are not deploy/ringtrain.sh's PACKAGES %s" % (got, wanted))
    if not re.search(r"^FROM debian:12 AS build", dockerfile, re.M):
        err(rel, "the build stage is not FROM debian:12")
    if "-DRINGTRAIN_CUDA=OFF" not in dockerfile:
        err(rel, "does not build with -DRINGTRAIN_CUDA=OFF")
    if "COPY deploy/jobs/ " + IMAGE_JOBS not in dockerfile:
        err(rel, "does not copy deploy/jobs/ to " + IMAGE_JOBS)


def check_systemd_env():
    rel = "deploy/systemd/worker.env.example"
    values = {}
    with open(os.path.join(root, rel)) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                key, _, value = line.partition("=")
                values[key] = value[1:-1] if value[:1] == value[-1:] == "'" else value
    for key in ("TF_CONFIG", SECRET_ENV, "RINGTRAIN_JOB"):
        if key not in values:
            err(rel, key + " is missing")
    if "TF_CONFIG" in values:
        cfg = json.loads(values["TF_CONFIG"])
        tf_configs.append({"source": rel, "text": values["TF_CONFIG"], "index": cfg["task"]["index"],
                           "workers": cfg["cluster"]["worker"], "environment": ""})
    with open(os.path.join(root, "deploy/systemd/ringtrain-worker@.service")) as f:
        unit = f.read()
    for line in ("EnvironmentFile=/etc/ringtrain/%i.env", "Restart=on-failure", "LimitNOFILE=65536"):
        if line not in unit.splitlines():
            err("deploy/systemd/ringtrain-worker@.service", "has no line " + line)
    stop = re.search(r"^TimeoutStopSec=(\d+)s?$", unit, re.M)
    check_preempt_grace("deploy/systemd/ringtrain-worker@.service", int(stop.group(1)) if stop else None,
                        {k: v for k, v in values.items() if k == "RINGTRAIN_PREEMPT_GRACE_S"})
    for key in ("SuccessExitStatus", "RestartForceExitStatus"):
        m = re.search(r"^%s=(.*)$" % key, unit, re.M)
        if not m or "7" not in m.group(1).split():
            err("deploy/systemd/ringtrain-worker@.service", "%s does not list 7 (preempted after a backup)" % key)
    prevent = re.search(r"^RestartPreventExitStatus=(.*)$", unit, re.M)
    if not prevent or not {"2", "3"} <= set(prevent.group(1).split()):
        err("deploy/systemd/ringtrain-worker@.service", "does not prevent restarts on exits 2 and 3")


def check_systemd_serve():
    rel = "deploy/systemd/ringtrain-serve@.service"
    with open(os.path.join(root, rel)) as f:
        unit = f.read()
    lines = unit.splitlines()
    for line in ("EnvironmentFile=/etc/ringtrain/%i.env", "Restart=always", "KillSignal=SIGTERM", "KillMode=mixed",
                 "LimitNOFILE=65536"):
        if line not in lines:
            err(rel, "has no line " + line)
    if not re.search(r"^ExecStart=/usr/local/bin/ringtrain serve --work_dir /\S+$", unit, re.M):
        err(rel, "does not run /usr/local/bin/ringtrain serve --work_dir DIR")
    stop = re.search(r"^TimeoutStopSec=(\d+)s?$", unit, re.M)
    check_preempt_grace(rel, int(stop.group(1)) if stop else None, {})
    prevent = re.search(r"^RestartPreventExitStatus=(.*)$", unit, re.M)
    if not prevent or "2" not in prevent.group(1).split():
        err(rel, "does not prevent restarts on exit 2 (bad configuration, a second daemon on the work directory)")


def check_sbatch():
    rel = "deploy/slurm/train.sbatch"
    with open(os.path.join(root, rel)) as f:
        script = f.read()
    default_job = re.search(r"^JOB=\$\{1:-([^}]*)\}$", script, re.M)
    if not default_job:
        return err(rel, "has no default job file (JOB=${1:-...})")
    signal = re.search(r"^#SBATCH --signal=(?:B:)?TERM@(\d+)$", script, re.M)
    check_preempt_grace(rel, int(signal.group(1)) if signal else None, {})
    if "worker --cluster_resolver slurm" not in script:
        err(rel, "does not run ringtrain worker --cluster_resolver slurm")
    job_files.append({"source": rel, "path": default_job.group(1), "recovery": "restart"})


def main():
    with tempfile.TemporaryDirectory() as tmp:
        fake = os.path.join(tmp, "ringtrain")
        with open(fake, "w") as f:
            f.write('#!/bin/sh\nprintf "%s\\n%s\\n" "$TF_CONFIG" "$*" > "$FAKE_OUT"\n')
        os.chmod(fake, 0o755)
        def check_kubernetes():
            check_k8s(tmp, os.path.join(tmp, "out"))

        def check_daemons():
            check_serve(tmp, os.path.join(tmp, "out"))
        for check in (check_kubernetes, check_tfjob, check_daemons, check_compose, check_dockerfile,
                      check_systemd_env, check_systemd_serve, check_sbatch):
            try:
                check()
            except (OSError, KeyError, IndexError, TypeError, ValueError, yaml.YAMLError) as e:
                err(getattr(check, "__name__", "check"), "%s: %s" % (type(e).__name__, e))
    with open(sys.argv[2], "w") as f:
        json.dump({"errors": errors, "tf_configs": tf_configs, "job_files": job_files}, f, indent=1)


if __name__ == "__main__":
    main()
