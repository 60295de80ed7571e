"""Chapter 5 reference solutions. The solution source shows students equivalent code."""

import copy

import torch
import torch.nn.functional as F
from torch import nn


def evaluate(model, x, y):
    """Mean cross-entropy in eval mode, without a graph; every module's mode restored."""
    modes = {m: m.training for m in model.modules()}
    model.eval()
    try:
        with torch.no_grad():
            return F.cross_entropy(model(x), y).item()
    finally:
        for m, training in modes.items():
            m.training = training


def modules_that_change(model, x):
    """Leaf modules whose output on the input they see differs between train and eval."""
    inputs, hooks = {}, []

    def keep_input(name):
        def hook(module, args, output):
            inputs[name] = args[0]  # returning nothing: a hook's return value replaces the output
        return hook

    for name, m in model.named_modules():
        if not list(m.children()):
            hooks.append(m.register_forward_hook(keep_input(name)))
    modes = {m: m.training for m in model.modules()}
    try:
        model.eval()
        with torch.no_grad():
            model(x)
    finally:
        for hook in hooks:
            hook.remove()
        for m, training in modes.items():
            m.training = training
    changed = []
    with torch.no_grad():
        for name, m in model.named_modules():
            if name in inputs:
                probe = copy.deepcopy(m)  # train mode may update buffers: use a copy
                if not torch.equal(probe.train()(inputs[name]), probe.eval()(inputs[name])):
                    changed.append(name)
    return changed


def mc_dropout(model, x, n_samples):
    """n_samples forward passes with only Dropout active: (mean, unbiased std)."""
    modes = {m: m.training for m in model.modules()}
    model.eval()
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.train()
    try:
        with torch.no_grad():
            samples = torch.stack([model(x) for _ in range(n_samples)])
    finally:
        for m, training in modes.items():
            m.training = training
    return samples.mean(dim=0), samples.std(dim=0)
