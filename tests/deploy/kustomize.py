"""A small kustomize renderer for the features deploy/kubernetes uses, so the manifests can be
tested where no kustomize binary exists (none is installable from PyPI).

Supported, as kustomize v5 does them: ``resources`` (files, kustomization directories, and
remote files by URL through the caller's ``fetch``),
``namespace`` (namespaced kinds only), ``labels`` without selectors, ``images`` (name to
newName/newTag), and ``patches`` given by ``path`` as strategic-merge patches, with Kubernetes'
merge keys for the pod-spec lists the patches touch (items the target lacks are put first, as
kustomize does). Anything else in a kustomization is refused rather than silently ignored;
tests/deploy/test_kubernetes.py compares this rendering with kustomize v5's own, built from its
Go module.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

Document = dict[str, Any]

SUPPORTED_KEYS = {"apiVersion", "kind", "resources", "namespace", "labels", "images", "patches"}
CLUSTER_SCOPED = {
    "ClusterRole",
    "ClusterRoleBinding",
    "Namespace",
    "CustomResourceDefinition",
    "PriorityClass",
    "StorageClass",
}
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "volumes": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
}
"""Kubernetes' patchMergeKey for the lists of a pod template (k8s.io/api core/v1 types)."""


def load_documents(path: Path) -> list[Document]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


Fetch = Callable[[str], Path]
"""Where the test finds the local copy of a remote resource."""


def render(directory: Path, fetch: Fetch | None = None) -> list[Document]:
    kustomization: Document = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unknown = set(kustomization) - SUPPORTED_KEYS
    if unknown:
        raise ValueError(f"{directory}: kustomization keys this renderer does not know: {unknown}")
    documents: list[Document] = []
    for resource in kustomization.get("resources", []):
        if resource.startswith("https://"):
            if fetch is None:
                raise ValueError(f"{directory}: remote resource {resource} and no fetch given")
            documents += load_documents(fetch(resource))
            continue
        target = directory / resource
        documents += render(target, fetch) if target.is_dir() else load_documents(target)
    namespace = kustomization.get("namespace")
    for label_set in kustomization.get("labels", []):
        if label_set.get("includeSelectors") or label_set.get("includeTemplates"):
            raise ValueError("labels with selectors or templates are not supported")
    for document in documents:
        metadata = document.setdefault("metadata", {})
        if namespace and document["kind"] not in CLUSTER_SCOPED:
            metadata["namespace"] = namespace
        for label_set in kustomization.get("labels", []):
            metadata.setdefault("labels", {}).update(label_set["pairs"])
    for patch in kustomization.get("patches", []):
        if set(patch) != {"path"}:
            raise ValueError(f"only patches given by path are supported: {patch}")
        apply_patch(documents, load_documents(directory / patch["path"]))
    for image in kustomization.get("images", []):
        set_image(documents, image)
    return documents


def apply_patch(documents: list[Document], patches: list[Document]) -> None:
    for patch in patches:
        key = identity(patch)
        matches = [doc for doc in documents if identity(doc) == key]
        if len(matches) != 1:
            raise ValueError(f"patch for {key} matches {len(matches)} resources")
        merged = strategic_merge(matches[0], patch)
        documents[documents.index(matches[0])] = merged


def identity(document: Document) -> tuple[str, str, str | None]:
    metadata = document.get("metadata", {})
    return document["kind"], metadata["name"], metadata.get("namespace")


def strategic_merge(target: Any, patch: Any, field: str | None = None) -> Any:
    if isinstance(patch, dict):
        if any(key.startswith("$") for key in patch):
            raise ValueError(f"patch directives are not supported: {sorted(patch)}")
        if not isinstance(target, dict):
            return copy.deepcopy(patch)
        merged = copy.deepcopy(target)
        for key, value in patch.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = strategic_merge(target.get(key), value, key)
        return merged
    if isinstance(patch, list) and field in MERGE_KEYS and isinstance(target, list):
        key = MERGE_KEYS[field]
        merged_items = [copy.deepcopy(item) for item in target]
        added = []
        for item in patch:
            index = next((i for i, old in enumerate(target) if old.get(key) == item[key]), None)
            if index is None:
                added.append(copy.deepcopy(item))
            else:
                merged_items[index] = strategic_merge(target[index], item, None)
        return added + merged_items
    return copy.deepcopy(patch)


def set_image(documents: list[Document], image: Document) -> None:
    for document in documents:
        spec = document.get("spec", {}).get("template", {}).get("spec", {})
        for container in spec.get("containers", []) + spec.get("initContainers", []):
            name, _, tag = container["image"].partition(":")
            if name != image["name"]:
                continue
            name = image.get("newName", name)
            tag = image.get("newTag", tag)
            container["image"] = f"{name}:{tag}" if tag else name
