"""Request and response bodies of the prediction service (pydantic, shown in the OpenAPI docs)."""

from __future__ import annotations

from typing import Optional, Union

from pydantic import (BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt,
                      StrictStr)

__all__ = ["PredictRequest", "ExplainRequest", "make_response_models"]

#: A covariate value as sent: strict JSON types (pydantic's lax mode would turn ``true``
#: into 1 and ``"2"`` into 2.0); the service then checks it against the column's kind.
CovariateValue = Union[StrictStr, StrictInt, StrictFloat, StrictBool, None]


class PredictRequest(BaseModel):
    """Texts to classify, with their covariates when the model has some."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"texts": ["NameNode fails to start after upgrade: edits log is corrupt"],
         "top": 3}]})

    texts: list[StrictStr] = Field(min_length=1, description="Documents (plain text).")
    covariates: Optional[list[dict[str, CovariateValue]]] = Field(
        None, description="One object per text: covariate name -> value (see GET /model).")
    top: StrictInt = Field(5, ge=0, le=10_000,
                     description="Most probable classes returned per text (0: all).")


class ExplainRequest(BaseModel):
    """Texts to classify and explain."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"texts": ["NameNode fails to start after upgrade: edits log is corrupt"],
         "classes": 3}]})

    texts: list[StrictStr] = Field(min_length=1, description="Documents (plain text).")
    covariates: Optional[list[dict[str, CovariateValue]]] = Field(
        None, description="One object per text: covariate name -> value (see GET /model).")
    classes: StrictInt = Field(3, ge=1, le=100, description="Most probable classes explained.")
    features: StrictInt = Field(8, ge=1, le=1000,
                          description="Largest feature contributions listed per class.")
    words: StrictInt = Field(10, ge=0, le=1000,
                       description="Words listed toward and against each class.")


def make_response_models():
    """The response models (built on demand so that importing this module stays cheap)."""

    class ClassProbability(BaseModel):
        label: str
        probability: float

    class Prediction(BaseModel):
        predicted: str
        classes: list[ClassProbability]

    warnings_field = Field(default_factory=list, description=(
        "What the service did with the input that the caller may not expect: a number sent "
        "as the value of a categorical covariate, an unseen or missing level, a text without "
        "any word of the model's vocabulary."))

    class Predictions(BaseModel):
        predictions: list[Prediction]
        warnings: list[str] = warnings_field

    class Feature(BaseModel):
        name: str = Field(description="'(intercept)', a covariate column or 'topic k'.")
        value: float = Field(description="The feature's value u_p in this document.")
        coef: float = Field(description="Posterior-mean coefficient eta_{l,p}.")
        contribution: float = Field(description="value x coef.")
        signal: bool = Field(description="Credible interval of coef excludes 0.")
        words: str = Field(description="Top words of a topic ('' otherwise).")

    class ExplainedClass(BaseModel):
        label: str
        probability: float
        score: float = Field(description="mu_l = u . eta_l (posterior mean).")
        rest: float = Field(description="Part of the score not carried by words "
                                        "(intercept, covariates).")
        features: list[Feature]
        weights: list[float] = Field(description="Contribution of every token in `tokens` to "
                                                 "the score; they add up to score - rest.")
        toward: list[tuple[str, float]] = Field(description="Words pushing toward the class.")
        against: list[tuple[str, float]] = Field(description="Words pushing against it.")

    class Explanation(BaseModel):
        predicted: str
        probabilities: list[ClassProbability]
        known_words: StrictInt = Field(description="Tokens of the text the model knows.")
        tokens: list[tuple[int, int, int]] = Field(
            description="[start, end, topic] of every known word: text[start:end] with start "
                        "and end in Unicode code points (Python's str indices; JavaScript "
                        "strings count UTF-16 units and must convert, as the page does), "
                        "its most frequent topic in the prediction sweeps.")
        classes: list[ExplainedClass]

    class Explanations(BaseModel):
        explanations: list[Explanation]
        warnings: list[str] = warnings_field

    class Health(BaseModel):
        status: str
        model: str
        classes: int
        uptime_seconds: float
        requests: int

    class SignalMark(BaseModel):
        model_config = ConfigDict(populate_by_name=True)
        class_: str = Field(alias="class")
        sign: str
        coef: float

    class Topic(BaseModel):
        name: str
        words: str
        signal_for: list[SignalMark]

    class Covariate(BaseModel):
        name: str
        type: str
        levels: Optional[list[str]] = None

    class ModelInfo(BaseModel):
        model_dir: str
        classes: list[str]
        covariates: list[Covariate]
        topics: list[Topic]
        summary: dict

    return Predictions, Explanations, Health, ModelInfo
