from django.urls import path

from billing.apis import ActivityListApi

from . import apis, views

app_name = "api"

urlpatterns = [
    path("models", views.models_list, name="models"),
    path("generation", apis.GenerationApi.as_view(), name="generation"),
    path("activity", ActivityListApi.as_view(), name="activity"),
]
