"""`sky.plugins.sklearn()`: scikit-learn's `n_jobs` fits run on the pool and give the local answer."""

from __future__ import annotations

import numpy as np
import pytest
from core_support import local_pool
from sklearn.datasets import load_iris
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.svm import SVC

import skyward as sky

pytestmark = pytest.mark.timeout(60)

GRID = {"C": [0.1, 1.0, 10.0], "kernel": ["linear", "rbf"]}


def test_transform_adds_scikit_learn_and_joblib() -> None:
    assert sky.plugins.sklearn().transform(sky.Image(), None).pip == ("scikit-learn", "joblib")
    pinned = sky.plugins.sklearn(version="1.5.2").transform(sky.Image(pip=["pandas"]), None)
    assert pinned.pip == ("pandas", "scikit-learn==1.5.2", "joblib")


def test_grid_search_on_the_pool_matches_the_local_search() -> None:
    X, y = load_iris(return_X_y=True)
    local = GridSearchCV(SVC(), GRID, cv=3, n_jobs=1).fit(X, y)

    batches: list[str] = []
    with local_pool(2, plugins=[sky.plugins.sklearn()]) as pool:
        pool.on(sky.TaskStarted, lambda event: batches.append(event.name))
        remote = GridSearchCV(SVC(), GRID, cv=3, n_jobs=-1).fit(X, y)
        # n_jobs=None means "the whole pool" inside the block, as under joblib.parallel_backend.
        scores = cross_val_score(SVC(C=1.0), X, y, cv=3)

    assert batches and set(batches) == {"joblib_batch"}  # the fits ran as pool tasks
    assert remote.best_params_ == local.best_params_
    assert remote.best_score_ == pytest.approx(local.best_score_, rel=0, abs=1e-12)
    np.testing.assert_allclose(
        remote.cv_results_["mean_test_score"], local.cv_results_["mean_test_score"], rtol=0, atol=1e-12
    )
    assert [p for p in remote.cv_results_["params"]] == [p for p in local.cv_results_["params"]]
    np.testing.assert_allclose(scores, cross_val_score(SVC(C=1.0), X, y, cv=3), rtol=0, atol=1e-12)
    # The refit estimator came back usable.
    assert (remote.predict(X) == local.predict(X)).all()
